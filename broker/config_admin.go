package broker

// ConfigAdminManager.preprocess for BROKER resources (KIP-226), shared by
// IncrementalAlterConfigs (44_incremental_alter_configs.go) and
// AlterConfigs (33_alter_configs.go). In KRaft the broker that receives the
// request validates a BROKER resource itself and forwards only what passes
// to the controller, whose ControllerConfigurationValidator checks no more
// than the resource name; so the refusals are the broker's:
//
//   - a config named twice: INVALID_REQUEST "Error due to duplicate config
//     keys"; a null value (but for DELETE): "Null value not supported for :
//     a, b";
//   - a resource name that is not this node's id: "Node id must be an
//     integer, but it is: x" / "Unexpected broker id, expected 1, but
//     received 2" ("" is the cluster-wide default);
//   - the resource's configs as they would become (incremental: the
//     image's configs of the resource with the operations applied,
//     prepareIncrementalConfigs; legacy: the request's configs) must pass
//     DynamicBrokerConfig.validate (config/dynamic.go) against this
//     broker's current config; a refusal is INVALID_REQUEST with Kafka's
//     message (KAFKA-13609: ConfigException is not an ApiException).
//
// validate_only changes nothing here: the checks run either way.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
)

// repeatedResources reports, for each of n resources (at names the i-th),
// whether the request names its (type, name) more than once: AlterConfigs and
// IncrementalAlterConfigs answer every copy INVALID_REQUEST
// errRepeatedResource (ConfigAdminManager.preprocess).
func repeatedResources(n int, at func(i int) (kmsg.ConfigResourceType, string)) []bool {
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	count := make(map[key]int, n)
	for i := range n {
		t, name := at(i)
		count[key{t, name}]++
	}
	out := make([]bool, n)
	for i := range n {
		t, name := at(i)
		out[i] = count[key{t, name}] > 1
	}
	return out
}

const errRepeatedResource = "Each resource must appear at most once."

// brokerConfigName checks a BROKER resource name
// (validateResourceNameIsCurrentNodeId); perBroker is false for "".
func (b *Broker) brokerConfigName(name string) (perBroker bool, e *apiError) {
	if name == "" {
		return false, nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return false, &apiError{kerr.InvalidRequest, "Node id must be an integer, but it is: " + name}
	}
	if int32(id) != b.nodeID {
		return false, &apiError{kerr.InvalidRequest, "Unexpected broker id, expected " + strconv.Itoa(int(b.nodeID)) + ", but received " + name}
	}
	return true, nil
}

// currentDynamic is the image's cluster-wide default and this broker's
// dynamic configs.
func (b *Broker) currentDynamic() (clusterDefault, perBroker map[string]string) {
	img := b.meta.Image()
	if img == nil {
		return map[string]string{}, map[string]string{}
	}
	clusterDefault, perBroker = img.DefaultBrokerConfig(), img.BrokerConfig(b.nodeID)
	if clusterDefault == nil {
		clusterDefault = map[string]string{}
	}
	if perBroker == nil {
		perBroker = map[string]string{}
	}
	return clusterDefault, perBroker
}

func (b *Broker) validateBrokerProps(props map[string]string, perBroker bool, clusterDefault, brokerCfgs map[string]string) *apiError {
	if err := b.cfg.ValidateDynamic(props, perBroker, clusterDefault, brokerCfgs); err != nil {
		return &apiError{kerr.InvalidRequest, err.Error()}
	}
	return nil
}

// preprocessIncrementalBroker is preprocess for one BROKER resource of an
// IncrementalAlterConfigs; nil: forward it.
func (b *Broker) preprocessIncrementalBroker(r *kmsg.IncrementalAlterConfigsRequestResource) *apiError {
	seen := map[string]bool{}
	var nulls []string
	for _, c := range r.Configs {
		if seen[c.Name] {
			return &apiError{kerr.InvalidRequest, "Error due to duplicate config keys"}
		}
		seen[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return &apiError{kerr.InvalidRequest, "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	perBroker, e := b.brokerConfigName(r.ResourceName)
	if e != nil {
		return e
	}
	clusterDefault, brokerCfgs := b.currentDynamic()
	props := maps.Clone(clusterDefault)
	if perBroker {
		props = maps.Clone(brokerCfgs)
	}
	for _, c := range r.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			props[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(props, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			k, ok := config.Lookup(c.Name)
			if !ok {
				return &apiError{kerr.InvalidConfig, "Unknown config name: " + c.Name}
			}
			verb := "append"
			if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			if k.Type != config.TypeList {
				return &apiError{kerr.InvalidConfig, "Config value " + verb + " is not allowed for config key: " + c.Name}
			}
			old, ok := props[c.Name]
			if !ok && k.HasDefault {
				old = k.Default
			}
			var parts []string
			if old != "" {
				parts = strings.Split(old, ",")
			}
			vals := strings.Split(*c.Value, ",")
			if c.Op == kmsg.IncrementalAlterConfigOpAppend {
				for _, v := range vals {
					if !slices.Contains(parts, v) {
						parts = append(parts, v)
					}
				}
			} else {
				parts = slices.DeleteFunc(parts, func(p string) bool { return slices.Contains(vals, p) })
			}
			props[c.Name] = strings.Join(parts, ",")
		default:
			return &apiError{kerr.InvalidRequest, "Unknown operations type " + strconv.Itoa(int(c.Op))}
		}
	}
	return b.validateBrokerProps(props, perBroker, clusterDefault, brokerCfgs)
}

// preprocessLegacyBroker is preprocess for one BROKER resource of an
// AlterConfigs (its configs replace the resource's); nil: forward it.
func (b *Broker) preprocessLegacyBroker(r *kmsg.AlterConfigsRequestResource) *apiError {
	seen := map[string]bool{}
	var nulls []string
	props := map[string]string{}
	for _, c := range r.Configs {
		if seen[c.Name] {
			return &apiError{kerr.InvalidRequest, "Error due to duplicate config keys"}
		}
		seen[c.Name] = true
		if c.Value == nil {
			nulls = append(nulls, c.Name)
		} else {
			props[c.Name] = *c.Value
		}
	}
	if len(nulls) > 0 {
		return &apiError{kerr.InvalidRequest, "Null value not supported for : " + strings.Join(nulls, ", ")}
	}
	perBroker, e := b.brokerConfigName(r.ResourceName)
	if e != nil {
		return e
	}
	clusterDefault, brokerCfgs := b.currentDynamic()
	return b.validateBrokerProps(props, perBroker, clusterDefault, brokerCfgs)
}
