package broker

// Cordoned log dirs (KIP-1066, cordoned.log.dirs): a cordoned log dir takes
// no new replicas. From metadata.version 4.3-IV0 (below it the config is
// inert, as in Kafka):
//
//   - DescribeLogDirs v5 marks the cordoned dirs (is_cordoned);
//   - a new replica's log goes to a dir that is not cordoned
//     (storage.Manager.SetCordonedDirs; a dir the metadata names for it is
//     used anyway);
//   - AlterReplicaLogDirs into a cordoned dir answers
//     INVALID_REPLICA_ASSIGNMENT;
//   - the heartbeats carry the cordoned dirs' ids (BrokerHeartbeat v2
//     CordonedLogDirs, null until the broker has caught up with the
//     metadata: Kafka's RECOVERY state), and the controller keeps new
//     replicas off a broker whose every dir is cordoned
//     (controller/logdirs.go).
//
// The config is dynamic (kafka-configs.sh --entity-type brokers
// --entity-name <id> --alter --add-config cordoned.log.dirs=...): this
// broker's dynamic value, then the cluster-wide default, then the static
// one. "*" cordons every log dir. A change naming a dir that is not one
// of this broker's log dirs is refused by the broker receiving it
// (config_admin.go, KafkaConfig's requirement); one that reaches the image
// otherwise (sent to the controller, or a cluster default naming another
// broker's dirs) has those entries ignored. BrokerRegistration v4 (the newest kmsg and this
// broker speak) has no cordoned dirs: the first heartbeat after catching
// up reports them.

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

const cordonedLogDirsKey = "cordoned.log.dirs"

// effectiveCordonedDirs returns the entries of cfg.LogDirs that are cordoned
// in img (none below metadata.version 4.3-IV0).
func effectiveCordonedDirs(cfg *config.Config, img *metadatacache.Image) []string {
	if cfg == nil || img == nil || img.MetadataVersion() < metadatacache.MV4_3_IV0 {
		return nil
	}
	var list []string
	found := false
	for _, m := range []map[string]string{img.BrokerConfig(cfg.NodeID), img.DefaultBrokerConfig()} {
		if v, ok := m[cordonedLogDirsKey]; ok {
			for _, e := range strings.Split(v, ",") {
				if e = strings.TrimSpace(e); e != "" {
					list = append(list, e)
				}
			}
			found = true
			break
		}
	}
	if !found {
		list = cfg.List(cordonedLogDirsKey)
	}
	if slices.Contains(list, "*") {
		return slices.Clone(cfg.LogDirs)
	}
	var out []string
	for _, d := range cfg.LogDirs {
		for _, e := range list {
			if sameDir(d, e) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// cordonedLogDirs is effectiveCordonedDirs by absolute path, as
// DescribeLogDirs names dirs.
func (b *Broker) cordonedLogDirs() map[string]bool {
	out := map[string]bool{}
	if b.cfg == nil || b.meta == nil {
		return out
	}
	for _, d := range effectiveCordonedDirs(b.cfg, b.meta.Image()) {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		out[d] = true
	}
	return out
}
