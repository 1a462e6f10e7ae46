package controller

// UpdateFeatures (57) v0-2, as Kafka's QuorumController.updateFeatures,
// FeatureControlManager and QuorumFeatures decide it (kafka-features.sh
// upgrade, downgrade and disable).
//
// The updates are checked one by one against the finalized levels with all
// of the request's updates applied; the first refused one fails the whole
// request (INVALID_UPDATE_VERSION, "The update failed for all features since
// the following feature had an error: ..."), otherwise the FeatureLevelRecords
// are written as one atomic batch (nothing with ValidateOnly, v1+). Each
// update:
//
//   - has an upgrade type (v1+: 1 UPGRADE, 2 SAFE_DOWNGRADE, 3
//     UNSAFE_DOWNGRADE; anything else is refused). v0's AllowDowngrade is
//     ignored, as Kafka's controller reads the v1 field's default (UPGRADE);
//   - must be supported by this controller (SupportedFeatures), by every
//     registered broker (its registration's Features; a feature it does not
//     list supports only 0) and, from metadata.version 3.7-IV0, by every other
//     registered controller (ControllerRegistration, controllers.go), and
//     every voter must have registered ("controller N has not registered,
//     and may not support this feature");
//   - lowering a level needs a downgrade type, raising one UPGRADE;
//   - metadata.version: lowering it is refused when a level in between changed
//     the metadata records (UNSAFE_DOWNGRADE is not supported either), as
//     MetadataVersion.checkIfMetadataChanged decides;
//   - kraft.version is a raft control record: an upgrade to 1 asks raft to
//     append it (raft.Node.UpgradeKRaftVersion: every voter must have sent the
//     leader its directory id with UpdateRaftVoter and support 1), then writes a
//     NoOpRecord, as FeatureControlManager does through its KRaftVersionAccessor;
//     it cannot be downgraded;
//   - any other feature must be a production feature whose level exists, with
//     its dependencies met (eligible.leader.replicas.version 1 needs
//     metadata.version 4.0-IV1); level 0 removes it.
//
// v2 answers only the top-level error; v0-1 also one result per feature,
// all with the request's outcome.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// Feature upgrade types (FeatureUpdate.UpgradeType).
const (
	upgradeUnknown       int8 = 0
	upgradeUpgrade       int8 = 1
	upgradeSafeDowngrade int8 = 2
	upgradeUnsafe        int8 = 3
)

// kraftVersioner is the part of *raft.Node that reads and upgrades
// kraft.version (Kafka's KRaftVersionAccessor).
type kraftVersioner interface {
	KRaftVersion() int16
	UpgradeKRaftVersion(epoch int32, version int16, validateOnly bool) error
}

func (c *Controller) updateFeatures(ctx context.Context, req *kmsg.UpdateFeaturesRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	img := c.cache.Image()
	var (
		recs   []metadatacache.Record
		apiErr *apiError
	)
	c.view(func(s *state) {
		finalized := s.features
		if kv, ok := c.cfg.Raft.(kraftVersioner); ok {
			finalized = maps.Clone(s.features)
			finalized[featureKRaftVersion] = kv.KRaftVersion()
		}
		recs, apiErr = c.featureUpdates(finalized, img, req)
		if apiErr == nil && !req.ValidateOnly && elrUpgrade(req) {
			recs = append(c.elrSafetyRecords(s), recs...)
		}
	})
	if apiErr == nil {
		// The kraft.version upgrade is raft's, outside stateMu.
		for _, u := range req.FeatureUpdates {
			if u.Feature != featureKRaftVersion || req.Version > 0 && u.UpgradeType != upgradeUpgrade {
				continue
			}
			if apiErr = c.upgradeKRaftVersion(u.MaxVersionLevel, req.ValidateOnly); apiErr != nil {
				break
			}
		}
	}
	if apiErr == nil && !req.ValidateOnly && len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			apiErr = bareAPIError(kerr.NotController)
		}
	}
	switch {
	case apiErr == nil:
	case apiErr.err == kerr.InvalidUpdateVersion:
		resp.ErrorCode = apiErr.code()
		resp.ErrorMessage = strp("The update failed for all features since the following feature had an error: " + *apiErr.msg)
	default:
		resp.ErrorCode, resp.ErrorMessage = apiErr.code(), apiErr.message()
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature, r.ErrorCode = u.Feature, resp.ErrorCode
			// Errors.message(): the error's default message, "NONE" for success.
			r.ErrorMessage = strp("NONE")
			if resp.ErrorCode != 0 {
				r.ErrorMessage = strp(kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Description)
			}
			resp.Results = append(resp.Results, r)
		}
	}
	return resp
}

// featureUpdates is FeatureControlManager.updateFeatures: the records of
// the request's updates, or the first update's error.
func (c *Controller) featureUpdates(finalized map[string]int16, img *metadatacache.Image, req *kmsg.UpdateFeaturesRequest) ([]metadatacache.Record, *apiError) {
	mv := finalized[featureMetadataVersion]
	proposed := make(map[string]int16, len(finalized)+len(req.FeatureUpdates))
	for k, v := range finalized {
		proposed[k] = v
	}
	proposed[featureMetadataVersion] = mv
	for _, u := range req.FeatureUpdates {
		proposed[u.Feature] = u.MaxVersionLevel
	}
	var recs []metadatacache.Record
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = upgradeUpgrade
		}
		rec, err := c.featureUpdate(u.Feature, u.MaxVersionLevel, typ, finalized, proposed, img)
		if err != nil {
			return nil, err
		}
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

// featureUpdate is FeatureControlManager.updateFeature.
func (c *Controller) featureUpdate(name string, level int16, typ int8, finalized, proposed map[string]int16, img *metadatacache.Image) (metadatacache.Record, *apiError) {
	if typ != upgradeUpgrade && typ != upgradeSafeDowngrade && typ != upgradeUnsafe {
		return nil, invalidUpdateVersion(name, level, "The controller does not support the given upgrade type.")
	}
	current := finalized[name] // kraft.version is 0: static voters
	if level < 0 {
		return nil, invalidUpdateVersion(name, level, "A feature version cannot be less than 0.")
	}
	if reason := c.reasonNotSupported(name, level, img); reason != "" {
		return nil, invalidUpdateVersion(name, level, reason)
	}
	if level < current && typ == upgradeUpgrade {
		return nil, invalidUpdateVersion(name, level, "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	}
	if level > current && typ != upgradeUpgrade {
		return nil, invalidUpdateVersion(name, level, "Can't downgrade to a newer version.")
	}
	switch name {
	case featureMetadataVersion:
		return c.metadataVersionUpdate(current, level, typ == upgradeUnsafe)
	case featureKRaftVersion:
		if typ == upgradeUpgrade {
			return metadatacache.NewNoOpRecord(), nil
		}
		if level != current {
			return nil, invalidUpdateVersion(name, level, "Can't downgrade the version of this feature.")
		}
		return nil, nil
	}
	spec, ok := FeatureSpecOf(name)
	if !ok {
		return nil, invalidUpdateVersion(name, level, fmt.Sprintf("Feature %s not found.", name))
	}
	if level > spec.KafkaMax() {
		return nil, invalidUpdateVersion(name, level, fmt.Sprintf("No feature:%s with feature level %d", name, level))
	}
	if err := checkDependencies(name, level, spec.Levels[level], proposed); err != nil {
		return nil, invalidUpdateVersion(name, level, err.Error())
	}
	return featureRecord(name, level), nil
}

// reasonNotSupported is FeatureControlManager.reasonNotSupported: why this
// controller, a registered broker or another registered controller cannot
// take the level ("" if all can).
func (c *Controller) reasonNotSupported(name string, level int16, img *metadatacache.Image) string {
	r := localRange(name)
	if reason := rangeReason(level, fmt.Sprintf("Local controller %d", c.cfg.NodeID), r.Min, r.Max); reason != "" {
		return reason
	}
	brokers, controllers := 0, 1
	for _, b := range img.Brokers() {
		fr := b.SupportedFeatures[name] // absent: 0-0 (QuorumFeatures.DISABLED)
		if reason := rangeReason(level, fmt.Sprintf("Broker %d", b.ID), fr.Min, fr.Max); reason != "" {
			return reason
		}
		brokers++
	}
	note := ""
	if img.MetadataVersion() >= mv3_7_IV0 {
		found := map[int32]bool{c.cfg.NodeID: true}
		for _, ctl := range img.Controllers() {
			if ctl.ID == c.cfg.NodeID {
				continue
			}
			fr := ctl.SupportedFeatures[name]
			if reason := rangeReason(level, fmt.Sprintf("Controller %d", ctl.ID), fr.Min, fr.Max); reason != "" {
				return reason
			}
			found[ctl.ID] = true
			controllers++
		}
		if c.cfg.QuorumNodeIDs != nil {
			for _, id := range c.cfg.QuorumNodeIDs() {
				if !found[id] {
					return fmt.Sprintf("controller %d has not registered, and may not support this feature", id)
				}
			}
		}
	} else {
		note = " Note: unable to verify controller support in the current MetadataVersion."
	}
	c.log.Info(fmt.Sprintf("Verified that %d broker(s) and %d controller(s) supported changing %s to feature level %d.%s",
		brokers, controllers, name, level, note))
	return ""
}

// rangeReason is QuorumFeatures.reasonNotSupported.
func rangeReason(level int16, what string, lo, hi int16) string {
	if level >= lo && level <= hi {
		return ""
	}
	if hi == 0 {
		return what + " does not support this feature."
	}
	return what + " only supports versions " + versionRange(lo, hi)
}

// versionRange is VersionRange.toString.
func versionRange(lo, hi int16) string {
	switch {
	case lo == hi:
		return fmt.Sprint(lo)
	case hi == 32767:
		return fmt.Sprintf("%d+", lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// metadataVersionUpdate is FeatureControlManager.updateMetadataVersion.
func (c *Controller) metadataVersionUpdate(current, level int16, unsafe bool) (metadatacache.Record, *apiError) {
	if _, ok := metadatacache.MetadataVersionOf(level); !ok {
		return nil, newAPIError(kerr.InvalidUpdateVersion, "Invalid metadata.version %d. Valid versions are from %d to %d.",
			level, metadatacache.MinimumMetadataVersion, metadatacache.LatestMetadataVersion)
	}
	switch {
	case level < current && metadatacache.MetadataChangedBetween(level, current):
		reason := "Refusing to perform the requested downgrade because it might delete metadata information."
		if unsafe {
			reason = "Unsafe metadata downgrade is not supported in this version."
		}
		return nil, newAPIError(kerr.InvalidUpdateVersion, "Unsupported metadata.version downgrade from %d to %d. %s", current, level, reason)
	case level < current:
		c.log.Warn("downgrading metadata.version", zap.String("from", metadatacache.MetadataVersionName(current)), zap.String("to", metadatacache.MetadataVersionName(level)))
	case level > current:
		c.log.Warn("upgrading metadata.version", zap.String("from", metadatacache.MetadataVersionName(current)), zap.String("to", metadatacache.MetadataVersionName(level)))
	}
	return featureRecord(featureMetadataVersion, level), nil
}

// invalidUpdateVersion is FeatureControlManager.invalidUpdateVersion.
func invalidUpdateVersion(name string, level int16, reason string) *apiError {
	return newAPIError(kerr.InvalidUpdateVersion, "Invalid update version %d for feature %s. %s", level, name, reason)
}

// upgradeKRaftVersion asks raft to append the kraft.version upgrade
// (FeatureControlManager.updateFeature: KRaftVersionAccessor.upgradeKRaftVersion);
// raft refuses with Kafka's messages.
func (c *Controller) upgradeKRaftVersion(level int16, validateOnly bool) *apiError {
	kv, ok := c.cfg.Raft.(kraftVersioner)
	if !ok || level == 0 {
		return nil
	}
	err := kv.UpgradeKRaftVersion(c.mu.activeEpoch, level, validateOnly)
	var ue *raft.UpgradeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return newAPIError(kerr.ErrorForCode(ue.Code).(*kerr.Error), "%s", ue.Msg)
	default:
		return bareAPIError(kerr.NotController)
	}
}

// elrUpgrade reports whether the request sets eligible.leader.replicas.version
// above 0.
func elrUpgrade(req *kmsg.UpdateFeaturesRequest) bool {
	for _, u := range req.FeatureUpdates {
		if u.Feature == featureELRVersion && u.MaxVersionLevel > 0 {
			return true
		}
	}
	return false
}

// elrSafetyRecords is ConfigurationControlManager.maybeGenerateElrSafetyRecords,
// written before the FeatureLevelRecord that enables ELR: the cluster-level
// min.insync.replicas (the static value) when none is set, and the removal
// of every broker-level one, so that one minimum governs the ELR rules.
func (c *Controller) elrSafetyRecords(s *state) []metadatacache.Record {
	var recs []metadatacache.Record
	if _, ok := s.configs[configResource{resourceBroker, ""}]["min.insync.replicas"]; !ok {
		recs = append(recs, configRecord(resourceBroker, "", "min.insync.replicas", strp(strconv.Itoa(c.minISR()))))
	}
	var brokers []string
	for res, cfg := range s.configs {
		if _, ok := cfg["min.insync.replicas"]; ok && res.typ == resourceBroker && res.name != "" {
			brokers = append(brokers, res.name)
		}
	}
	slices.Sort(brokers)
	for _, b := range brokers {
		recs = append(recs, configRecord(resourceBroker, b, "min.insync.replicas", nil))
	}
	if len(recs) > 0 {
		c.log.Info("enabling eligible leader replicas: fixing min.insync.replicas at the cluster level",
			zap.Int("records", len(recs)), zap.Strings("broker_level_removed", brokers))
	}
	return recs
}
