package controller

import (
	"context"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// The active controller's periodic elections (QuorumController's
// PeriodicTasks "electPreferred" and "electUnclean"):
//
//   - with auto.leader.rebalance.enable, every
//     leader.imbalance.check.interval.seconds, a PREFERRED election for
//     every partition whose leader is not its first replica
//     (ReplicationControlManager.maybeBalancePartitionLeaders);
//   - every unclean.leader.election.interval.ms, an UNCLEAN election for
//     every leaderless partition whose topic has
//     unclean.leader.election.enable (maybeElectUncleanLeaders), so a
//     config turned on after the partition lost its leader takes effect.
//     With ELR the election still prefers an eligible replica, then the
//     last known leader (partitions.go).
//
// Each run writes at most maxElectionsPerImbalance changes in one batch
// and runs again at once while it hit that bound, as Kafka reschedules the
// task immediately. Kafka 4.4 has no leader.imbalance.per.broker.percentage
// (the ZooKeeper controller's threshold): any imbalanced partition counts.

const maxElectionsPerImbalance = 1000

// balancePartitionLeaders runs the electPreferred task once; it reports
// whether it hit the bound (more may be pending).
func (c *Controller) balancePartitionLeaders() bool {
	return c.periodicElections("electPreferred", func(s *state, mv int16) []metadatacache.Record {
		var recs []metadatacache.Record
		for _, t := range s.sortedTopics() {
			for pid, p := range t.parts {
				if len(recs) >= maxElectionsPerImbalance {
					return recs
				}
				if len(p.replicas) == 0 || p.leader == p.replicas[0] {
					continue
				}
				if r, _ := electLeader(s, mv, t.name, int32(pid), electionTypePreferred); r != nil {
					recs = append(recs, r)
				}
			}
		}
		return recs
	})
}

// electUncleanLeaders runs the electUnclean task once.
func (c *Controller) electUncleanLeaders() bool {
	return c.periodicElections("electUnclean", func(s *state, mv int16) []metadatacache.Record {
		var recs []metadatacache.Record
		for _, t := range s.sortedTopics() {
			if !s.uncleanElection(t.name) {
				continue
			}
			for pid, p := range t.parts {
				if len(recs) >= maxElectionsPerImbalance {
					return recs
				}
				if p.leader != -1 {
					continue
				}
				if r, _ := electLeader(s, mv, t.name, int32(pid), electionTypeUnclean); r != nil {
					c.log.Warn("triggering an unclean leader election for an offline partition", zap.String("topic", t.name), zap.Int("partition", pid))
					recs = append(recs, r)
				}
			}
		}
		return recs
	})
}

func (c *Controller) periodicElections(task string, plan func(s *state, mv int16) []metadatacache.Record) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.activeLocked() {
		return false
	}
	var recs []metadatacache.Record
	c.view(func(s *state) { recs = plan(s, s.metadataVersion()) })
	if len(recs) == 0 {
		return false
	}
	if _, err := c.write(context.Background(), recs); err != nil {
		c.log.Debug("periodic elections not written", zap.String("task", task), zap.Error(err))
		return false
	}
	c.log.Info("periodic leader elections", zap.String("task", task), zap.Int("partitions", len(recs)))
	return len(recs) >= maxElectionsPerImbalance
}
