package controller

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// IncrementalAlterConfigs (44) v0-1 and AlterConfigs (33) v0-2 for TOPIC,
// BROKER, CLIENT_METRICS and GROUP resources, as ControllerApis and
// ConfigurationControlManager answer them: each resource succeeds or fails
// whole; its changes become ConfigRecords (a nil value deletes). A BROKER
// resource named "" is the cluster-wide default. Changes to BROKER resources
// are written even when the value is unchanged (KAFKA-14136: brokers reload
// on the record).
//
// CLIENT_METRICS (KIP-714 subscriptions): the forwarding broker's
// ConfigAdminManager.preprocess checks come first (a key twice: "Error due
// to duplicate config keys"; a SET, or a legacy value, without a value:
// "Null value not supported for : <keys>"), then the resource's configs
// after the change go through ClientMetricsConfigs.validate
// (config.ValidateClientMetrics). No subscription needs to exist: the first
// change creates it, deleting its last key removes it. APPEND and SUBTRACT
// are refused as for a non-LIST key (Kafka's controller knows no
// client metrics config types).
//
// GROUP (KIP-848 group configs, KIP-932's share.* keys): the same
// preprocess checks as CLIENT_METRICS (ConfigAdminManager.preprocess treats
// TOPIC, CLIENT_METRICS and GROUP alike), then
// ControllerConfigurationValidator's GROUP case: the name "" is
// INVALID_REQUEST "Default group resources are not allowed.", and the
// group's configs after the change go through GroupConfig.validate
// (Config.ValidateGroupConfigs: unknown keys, types, the broker's
// group.* min/max bounds), INVALID_CONFIG with Kafka's message. Any group
// name is accepted whether or not the group exists (Kafka's existence
// checker knows only topics and brokers). APPEND and SUBTRACT are refused
// as for a non-LIST key: Kafka's controller KafkaConfigSchema has no GROUP
// entry, so even streams.rack.aware.assignment.tags is not splittable.
// The records are ConfigRecords of resource type 32, replayed, deleted
// and snapshotted as any other config resource.

// Incremental ops (AlterConfigOp.OpType).
const (
	opSet      = 0
	opDelete   = 1
	opAppend   = 2
	opSubtract = 3
)

var opNames = [...]string{"SET", "DELETE", "APPEND", "SUBTRACT"}

type configChange struct {
	op    int8
	value *string
}

func resourceTypeName(t int8) string {
	switch t {
	case resourceTopic:
		return "TOPIC"
	case resourceBroker:
		return "BROKER"
	case 8:
		return "BROKER_LOGGER"
	case 16:
		return "CLIENT_METRICS"
	case 32:
		return "GROUP"
	}
	return "UNKNOWN"
}

func (c *Controller) incrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	add := func(typ kmsg.ConfigResourceType, name string, e *apiError) {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = typ, name, e.code(), e.message()
		resp.Resources = append(resp.Resources, rr)
	}
	type resChanges struct {
		res     configResource
		changes map[string]configChange
		order   []string
		pre     *apiError // the forwarding broker's preprocess error
	}
	var (
		list []*resChanges
		byID = make(map[configResource]*resChanges)
		dups = make(map[configResource]bool)
	)
	for _, r := range req.Resources {
		typ := int8(r.ResourceType)
		switch typ {
		case resourceTopic, resourceBroker, resourceClientMetrics, resourceGroup:
		case 8:
			add(r.ResourceType, r.ResourceName, newAPIError(kerr.InvalidRequest, "Unexpected resource type %s.", resourceTypeName(typ)))
			continue
		default:
			add(r.ResourceType, r.ResourceName, newAPIError(kerr.UnsupportedVersion, "Unknown resource type %d.", typ))
			continue
		}
		res := configResource{typ, r.ResourceName}
		if dups[res] {
			continue
		}
		if byID[res] != nil {
			dups[res] = true
			add(r.ResourceType, r.ResourceName, newAPIError(kerr.InvalidRequest, "Duplicate resource."))
			continue
		}
		rc := &resChanges{res: res, changes: make(map[string]configChange)}
		var nulls []string
		for _, cfg := range r.Configs {
			if _, ok := rc.changes[cfg.Name]; !ok {
				rc.order = append(rc.order, cfg.Name)
			} else if rc.pre == nil {
				rc.pre = newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
			}
			if cfg.Op != opDelete && cfg.Value == nil {
				nulls = append(nulls, cfg.Name)
			}
			rc.changes[cfg.Name] = configChange{op: int8(cfg.Op), value: cfg.Value}
		}
		if rc.pre == nil && len(nulls) > 0 {
			rc.pre = nullValuesError(nulls)
		}
		if typ != resourceClientMetrics && typ != resourceGroup {
			rc.pre = nil // kgo-broker's other resource types keep their own checks
		}
		byID[res] = rc
		list = append(list, rc)
	}
	var kept []*resChanges
	for _, rc := range list {
		if !dups[rc.res] {
			kept = append(kept, rc)
		}
	}
	results := c.applyConfigPlans(ctx, len(kept), req.ValidateOnly, func(s *state, i int) ([]metadatacache.Record, *apiError) {
		if kept[i].pre != nil {
			return nil, kept[i].pre
		}
		return c.incrementalAlterResource(s, kept[i].res, kept[i].changes, kept[i].order)
	})
	for i, rc := range kept {
		add(kmsg.ConfigResourceType(rc.res.typ), rc.res.name, results[i])
	}
	return resp
}

// incrementalAlterResource is incrementalAlterConfigResource. stateMu is held.
func (c *Controller) incrementalAlterResource(s *state, res configResource, changes map[string]configChange, order []string) ([]metadatacache.Record, *apiError) {
	cur := s.configs[res]
	var recs []metadatacache.Record
	for _, key := range order {
		ch := changes[key]
		old, had := cur[key]
		var oldp *string
		if had {
			oldp = &old
		}
		newp := oldp
		switch ch.op {
		case opSet:
			newp = ch.value
		case opDelete:
			newp = nil
		case opAppend, opSubtract:
			isList, def := false, (*string)(nil)
			if c.cfg.ListConfig != nil {
				isList, def = c.cfg.ListConfig(res.typ, key)
			}
			if !isList {
				return nil, newAPIError(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", opNames[ch.op], key)
			}
			base := oldp
			if base == nil {
				base = def
			}
			parts := splitParts(base)
			var vals []string
			if ch.value != nil {
				vals = strings.Split(*ch.value, ",")
			}
			if ch.op == opAppend {
				for _, v := range vals {
					if !containsString(parts, v) {
						parts = append(parts, v)
					}
				}
			} else {
				for _, v := range vals {
					parts = removeString(parts, v)
				}
			}
			newp = strp(strings.Join(parts, ","))
		default:
			if res.typ == resourceClientMetrics || res.typ == resourceGroup {
				// OpType.forId's IllegalArgumentException in the
				// controller: no message.
				return nil, bareAPIError(kerr.UnknownServerError)
			}
			return nil, newAPIError(kerr.InvalidRequest, "Unknown config operation %d for key %s.", ch.op, key)
		}
		if !equalStrPtr(oldp, newp) || res.typ == resourceBroker {
			recs = append(recs, configRecord(res.typ, res.name, key, newp))
		}
	}
	if e := c.validateConfigChange(s, res, recs); e != nil {
		return nil, e
	}
	return recs, nil
}

// validateConfigChange is ConfigurationControlManager.validateAlterConfig:
// the generic validator, then the resource must exist.
func (c *Controller) validateConfigChange(s *state, res configResource, recs []metadatacache.Record) *apiError {
	switch res.typ {
	case resourceTopic:
		if res.name == "" {
			return newAPIError(kerr.InvalidRequest, "Default topic resources are not allowed.")
		}
		if msg := validateTopicName(res.name); msg != "" {
			return newAPIError(kerr.InvalidTopicException, "%s", msg)
		}
		for _, r := range recs {
			cr := r.(*metadatacache.ConfigRecord)
			if cr.Value == nil || c.cfg.ValidateTopicConfig == nil {
				continue
			}
			if err := c.cfg.ValidateTopicConfig(cr.Name, *cr.Value); err != nil {
				return newAPIError(kerr.InvalidConfig, "%s", err.Error())
			}
		}
		if _, ok := s.topicsByName[res.name]; !ok {
			return newAPIError(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", res.name)
		}
	case resourceBroker:
		if e := cordonedDirsDisabled(s, recs); e != nil {
			return e
		}
		if res.name == "" {
			return c.validateBrokerConfigs(recs)
		}
		id, err := strconv.ParseInt(res.name, 10, 32)
		if err != nil {
			return newAPIError(kerr.InvalidRequest, "Unable to parse broker name as a base 10 number.")
		}
		if id < 0 {
			return newAPIError(kerr.InvalidRequest, "Invalid negative broker ID.")
		}
		if e := c.validateBrokerConfigs(recs); e != nil {
			return e
		}
		if _, ok := s.brokers[int32(id)]; !ok && int32(id) != c.cfg.NodeID {
			return newAPIError(kerr.BrokerIDNotRegistered, "No node with id %d found.", id)
		}
	case resourceGroup:
		if res.name == "" {
			return newAPIError(kerr.InvalidRequest, "Default group resources are not allowed.")
		}
		if c.cfg.ValidateGroupConfigs == nil {
			return nil
		}
		if err := c.cfg.ValidateGroupConfigs(configsAfter(s, res, recs)); err != nil {
			return newAPIError(kerr.InvalidConfig, "%s", err.Error())
		}
	case resourceClientMetrics:
		after := configsAfter(s, res, recs)
		if e := config.ValidateClientMetrics(res.name, after); e != nil {
			if e.InvalidRequest {
				return newAPIError(kerr.InvalidRequest, "%s", e.Msg)
			}
			return newAPIError(kerr.InvalidConfig, "%s", e.Msg)
		}
	}
	return nil
}

// configsAfter is a resource's configs once recs are applied
// (ConfigurationControlManager.validateAlterConfig's allConfigs).
func configsAfter(s *state, res configResource, recs []metadatacache.Record) map[string]string {
	after := maps.Clone(s.configs[res])
	if after == nil {
		after = make(map[string]string)
	}
	for _, r := range recs {
		cr := r.(*metadatacache.ConfigRecord)
		if cr.Value == nil {
			delete(after, cr.Name)
		} else {
			after[cr.Name] = *cr.Value
		}
	}
	return after
}

// nullValuesError is ConfigAdminManager.preprocess's answer to keys set
// without a value.
func nullValuesError(keys []string) *apiError {
	return newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(keys, ", "))
}

func (c *Controller) validateBrokerConfigs(recs []metadatacache.Record) *apiError {
	for _, r := range recs {
		// The replication throttle rates are LONG >= 0
		// (DynamicConfig.Broker.validate; Kafka's forwarding broker answers
		// INVALID_REQUEST with the message, KAFKA-13609).
		if cr := r.(*metadatacache.ConfigRecord); cr.Value != nil {
			if err := config.ValidateBrokerQuotaConfig(cr.Name, *cr.Value); err != nil {
				return newAPIError(kerr.InvalidRequest, "%s", err.Error())
			}
		}
	}
	if c.cfg.ValidateBrokerConfig == nil {
		return nil
	}
	for _, r := range recs {
		cr := r.(*metadatacache.ConfigRecord)
		if cr.Value == nil {
			continue
		}
		if err := c.cfg.ValidateBrokerConfig(cr.Name, *cr.Value); err != nil {
			return newAPIError(kerr.InvalidConfig, "%s", err.Error())
		}
	}
	return nil
}

func (c *Controller) alterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	add := func(typ kmsg.ConfigResourceType, name string, e *apiError) {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = typ, name, e.code(), e.message()
		resp.Resources = append(resp.Resources, rr)
	}
	type resConfigs struct {
		res     configResource
		configs map[string]*string
		order   []string
		dupKeys bool // a key twice (ConfigAdminManager.preprocess)
	}
	var (
		list []*resConfigs
		byID = make(map[configResource]*resConfigs)
		dups = make(map[configResource]bool)
	)
	for _, r := range req.Resources {
		typ := int8(r.ResourceType)
		switch typ {
		case resourceTopic, resourceBroker, resourceClientMetrics, resourceGroup:
		case 8:
			add(r.ResourceType, r.ResourceName, newAPIError(kerr.InvalidRequest, "Unexpected resource type %s.", resourceTypeName(typ)))
			continue
		default:
			add(r.ResourceType, r.ResourceName, newAPIError(kerr.UnsupportedVersion, "Unknown resource type %d.", typ))
			continue
		}
		res := configResource{typ, r.ResourceName}
		if dups[res] {
			continue
		}
		if byID[res] != nil {
			dups[res] = true
			add(r.ResourceType, r.ResourceName, newAPIError(kerr.InvalidRequest, "Duplicate resource."))
			continue
		}
		rc := &resConfigs{res: res, configs: make(map[string]*string)}
		for _, cfg := range r.Configs {
			if _, ok := rc.configs[cfg.Name]; !ok {
				rc.order = append(rc.order, cfg.Name)
			} else {
				rc.dupKeys = true
			}
			rc.configs[cfg.Name] = cfg.Value
		}
		byID[res] = rc
		list = append(list, rc)
	}
	var kept []*resConfigs
	for _, rc := range list {
		if !dups[rc.res] {
			kept = append(kept, rc)
		}
	}
	results := c.applyConfigPlans(ctx, len(kept), req.ValidateOnly, func(s *state, i int) ([]metadatacache.Record, *apiError) {
		if kept[i].dupKeys && kept[i].res.typ == resourceGroup {
			return nil, newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		return c.legacyAlterResource(s, kept[i].res, kept[i].configs, kept[i].order)
	})
	for i, rc := range kept {
		add(kmsg.ConfigResourceType(rc.res.typ), rc.res.name, results[i])
	}
	return resp
}

// legacyAlterResource is legacyAlterConfigResource: the resource's configs
// become exactly the given ones. stateMu is held.
func (c *Controller) legacyAlterResource(s *state, res configResource, configs map[string]*string, order []string) ([]metadatacache.Record, *apiError) {
	cur := s.configs[res]
	var recs []metadatacache.Record
	var nulls []string
	for _, key := range order {
		v := configs[key]
		if v == nil && (res.typ == resourceTopic || res.typ == resourceClientMetrics || res.typ == resourceGroup) {
			nulls = append(nulls, key)
		}
		old, had := cur[key]
		var oldp *string
		if had {
			oldp = &old
		}
		if !equalStrPtr(oldp, v) || res.typ == resourceBroker {
			recs = append(recs, configRecord(res.typ, res.name, key, v))
		}
	}
	if len(nulls) > 0 && (res.typ == resourceClientMetrics || res.typ == resourceGroup) {
		return nil, nullValuesError(nulls)
	}
	if len(nulls) > 0 {
		return nil, newAPIError(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(nulls, ","))
	}
	var removed []string
	for key := range cur {
		if _, ok := configs[key]; !ok {
			removed = append(removed, key)
		}
	}
	sort.Strings(removed)
	var dels []metadatacache.Record
	for _, key := range removed {
		dels = append(dels, configRecord(res.typ, res.name, key, nil))
	}
	check := recs
	if res.typ == resourceClientMetrics || res.typ == resourceGroup {
		// The validator sees the configs after the change, the
		// implicitly deleted keys gone.
		check = append(slices.Clone(recs), dels...)
	}
	if e := c.validateConfigChange(s, res, check); e != nil {
		return nil, e
	}
	return append(recs, dels...), nil
}

func splitParts(v *string) []string {
	if v == nil {
		return nil
	}
	var out []string
	for _, p := range strings.Split(*v, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func removeString(xs []string, x string) []string {
	out := xs[:0]
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

func equalStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// applyConfigPlans plans the records of n resources under one view of the
// state (plan returns resource i's records or its error), refuses the whole
// request when the records exceed maxRecordsPerUserOp, and writes them as one
// batch unless validateOnly. It returns each resource's error (nil: applied).
// Shared by IncrementalAlterConfigs and AlterConfigs.
func (c *Controller) applyConfigPlans(ctx context.Context, n int, validateOnly bool, plan func(s *state, i int) ([]metadatacache.Record, *apiError)) []*apiError {
	var recs []metadatacache.Record
	results := make([]*apiError, n)
	c.view(func(s *state) {
		for i := range n {
			rrecs, e := plan(s, i)
			if e == nil {
				e = elrMinISRCheck(s, rrecs)
			}
			results[i] = e
			if e == nil {
				recs = append(recs, rrecs...)
			}
		}
		recs = append(recs, clearElrRecords(s, recs)...)
	})
	if len(recs) > maxRecordsPerUserOp {
		for i := range results {
			results[i] = errBatchTooLarge
		}
		recs = nil
	}
	if !validateOnly && len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			for i := range results {
				results[i] = defaultAPIError(kerr.NotController)
			}
		}
	}
	return results
}

// elrMinISRCheck refuses, while ELR is enabled, a change of a broker's own
// min.insync.replicas or the removal of the cluster-level one
// (ConfigurationControlManager.isDisallowedBrokerMinIsrTransition and
// isDisallowedClusterMinIsrTransition): KIP-966's eligibility rules
// compare every ISR with one cluster-wide (or per-topic) minimum.
func elrMinISRCheck(s *state, recs []metadatacache.Record) *apiError {
	if !s.elrEnabled() {
		return nil
	}
	for _, r := range recs {
		cr, ok := r.(*metadatacache.ConfigRecord)
		if !ok || cr.Name != "min.insync.replicas" || cr.ResourceType != resourceBroker {
			continue
		}
		if cr.ResourceName != "" {
			return newAPIError(kerr.InvalidConfig, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
		}
		if cr.Value == nil {
			return newAPIError(kerr.InvalidConfig, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
		}
	}
	return nil
}

// clearElrRecords is createClearElrRecordsAsNeeded: while ELR is enabled,
// a change of a topic's min.insync.replicas clears that topic's ELRs and a
// change of the cluster-level one clears every ELR (ClearElrRecord): an
// ELR member was eligible under the old minimum only.
func clearElrRecords(s *state, recs []metadatacache.Record) []metadatacache.Record {
	if !s.elrEnabled() {
		return nil
	}
	var out []metadatacache.Record
	for _, r := range recs {
		cr, ok := r.(*metadatacache.ConfigRecord)
		if !ok || cr.Name != "min.insync.replicas" {
			continue
		}
		ce := metadatacache.NewClearElrRecord()
		ce.SetVersion(0)
		if cr.ResourceType == resourceTopic {
			ce.TopicName = cr.ResourceName
		}
		out = append(out, ce)
	}
	return out
}
