package broker

// The BROKER_LOGGER config resource (KIP-412): kgo-broker's loggers and
// their levels, shown by DescribeConfigs (32_describe_configs.go) and
// changed by IncrementalAlterConfigs on the node itself, never forwarded
// (Kafka's ConfigAdminManager.preprocess with RuntimeLoggerManager): the
// levels are the process's, not durable, and a restart forgets them, as
// Kafka's log4j levels. `kafka-configs.sh --entity-type broker-loggers
// --entity-name <id> --describe / --alter --add-config raft=DEBUG` uses it.
//
// The loggers are zap's names (logging.Levels): root, and "raft",
// "replication", "storage", "group", "txn", "controller" and the rest the
// node names, with their children (a dotted name inherits its nearest
// ancestor's level).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/logging"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// brokerLoggerEntries describes the loggers (ConfigHelper's BROKER_LOGGER
// case: Log4jController.loggers, each DYNAMIC_BROKER_LOGGER_CONFIG,
// not read-only, no synonyms).
func (b *Broker) brokerLoggerEntries(o describeOpts) []kmsg.DescribeConfigsResponseResourceConfig {
	if b.logLevels == nil {
		return nil
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, lg := range b.logLevels.Loggers() {
		if !o.want(lg.Name) {
			continue
		}
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Value = lg.Name, strPtr(lg.Level)
		e.Source = kmsg.ConfigSourceDynamicBrokerLoggerConfig
		e.ConfigType = kmsg.ConfigTypeUnknown
		out = append(out, e)
	}
	return out
}

// brokerLoggerResult is the answer for one BROKER_LOGGER resource of an
// IncrementalAlterConfigs, on either listener (KafkaApis and ControllerApis
// both run RuntimeLoggerManager with ALTER_CONFIGS on the cluster).
func (b *Broker) brokerLoggerResult(req *protocol.Request, validateOnly bool, rs *kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
	rr := kmsg.NewIncrementalAlterConfigsResponseResource()
	rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
	if e := b.alterBrokerLoggers(b.authorizeCluster(req, opAlterConfigs), validateOnly, rs); e != nil {
		rr.ErrorCode, rr.ErrorMessage = e.code.Code, strPtr(e.msg)
	}
	return rr
}

// alterBrokerLoggers validates and, unless validateOnly, applies one
// BROKER_LOGGER resource of an IncrementalAlterConfigs
// (RuntimeLoggerManager.applyChangesForResource); nil is success.
func (b *Broker) alterBrokerLoggers(authorized, validateOnly bool, r *kmsg.IncrementalAlterConfigsRequestResource) *apiError {
	fail := func(code *kerr.Error, format string, args ...any) *apiError {
		return &apiError{code, fmt.Sprintf(format, args...)}
	}
	// ConfigAdminManager.preprocess: duplicate keys and null values first
	seen := map[string]bool{}
	var nulls []string
	for _, c := range r.Configs {
		if seen[c.Name] {
			return fail(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return fail(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	if !authorized {
		return fail(kerr.ClusterAuthorizationFailed, "%s", kerr.ClusterAuthorizationFailed.Description)
	}
	id, err := strconv.Atoi(r.ResourceName)
	if err != nil {
		return fail(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", r.ResourceName)
	}
	if int32(id) != b.nodeID {
		return fail(kerr.InvalidRequest, "Unexpected node id. Expected %d, but received %d", b.nodeID, id)
	}
	if b.logLevels == nil {
		return fail(kerr.InvalidConfig, "The loggers of this node have fixed levels")
	}
	for _, c := range r.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if !b.logLevels.Exists(c.Name) {
				return fail(kerr.InvalidConfig, "Logger %s does not exist!", c.Name)
			}
			if _, ok := logging.ParseLevel(*c.Value); !ok {
				return fail(kerr.InvalidConfig, "Cannot set the log level of %s to %s as it is not a supported log level. Valid log levels are %s",
					c.Name, *c.Value, strings.Join(logging.ValidLevels, ", "))
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if !b.logLevels.Exists(c.Name) {
				return fail(kerr.InvalidConfig, "Logger %s does not exist!", c.Name)
			}
			if c.Name == logging.RootLogger {
				return fail(kerr.InvalidRequest, "Removing the log level of the %s logger is not allowed", logging.RootLogger)
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return fail(kerr.InvalidRequest, "%s operation is not allowed for the BROKER_LOGGER resource", c.Op)
		default:
			return fail(kerr.InvalidRequest, "Unknown operation type %d is not allowed for the BROKER_LOGGER resource", int8(c.Op))
		}
	}
	if validateOnly {
		return nil
	}
	for _, c := range r.Configs {
		if c.Op == kmsg.IncrementalAlterConfigOpSet {
			_ = b.logLevels.Set(c.Name, *c.Value) // validated above
			b.logger.Warn("updated the log level of a logger", zap.String("logger", c.Name), zap.String("level", *c.Value))
		} else {
			b.logLevels.Unset(c.Name)
			b.logger.Warn("unset the log level of a logger", zap.String("logger", c.Name))
		}
	}
	return nil
}
