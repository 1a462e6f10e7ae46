package group

// A streams group's topology (KIP-1071 StreamsTopology) and its
// configuration against the metadata (streams/topics/InternalTopicManager,
// RepartitionTopics, ChangelogTopics, CopartitionedTopicsEnforcer): the
// number of tasks of each subtopology, the partition counts of the
// internal topics, and what is wrong or missing.

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

type topicInfo struct {
	name       string
	partitions int32
	rf         int16
	configs    [][2]string
}

type copartitionGroup struct{ sources, regex, repartition []int16 }

type subtopology struct {
	id                 string
	sources            []string
	sourceRegex        []string
	changelogs         []topicInfo
	repartitionSinks   []string
	repartitionSources []topicInfo
	copartition        []copartitionGroup
}

type streamsTopology struct {
	epoch int32
	subs  []subtopology // sorted by id
}

// topologyFromRequest is StreamsTopology.fromHeartbeatRequest: the
// subtopologies sorted by id, as the topology record stores them.
func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTopology {
	out := &streamsTopology{epoch: t.Epoch}
	infos := func(a []kmsg.TopicInfo) []topicInfo {
		var r []topicInfo
		for _, x := range a {
			ti := topicInfo{name: x.Topic, partitions: x.NumPartitions, rf: x.ReplicationFactor}
			for _, c := range x.Configs {
				ti.configs = append(ti.configs, [2]string{c.Key, c.Value})
			}
			r = append(r, ti)
		}
		return r
	}
	for _, s := range t.Subtopologies {
		sub := subtopology{id: s.SubtopologyID, sources: slices.Clone(s.SourceTopics), sourceRegex: slices.Clone(s.SourceTopicRegex),
			changelogs: infos(s.StateChangelogTopics), repartitionSinks: slices.Clone(s.RepartitionSinkTopics),
			repartitionSources: infos(s.RepartitionSourceTopics)}
		for _, c := range s.CopartitionGroups {
			sub.copartition = append(sub.copartition, copartitionGroup{slices.Clone(c.SourceTopics), slices.Clone(c.SourceTopicRegex), slices.Clone(c.RepartitionSourceTopics)})
		}
		out.subs = append(out.subs, sub)
	}
	sort.Slice(out.subs, func(i, j int) bool { return out.subs[i].id < out.subs[j].id })
	return out
}

func (t *streamsTopology) equal(o *streamsTopology) bool {
	return string(streamsTopologyRecord("", t).Value) == string(streamsTopologyRecord("", o).Value)
}

// sourceTopics is every source topic and internal topic of the topology.
func (t *streamsTopology) allTopics() []string {
	set := map[string]bool{}
	for _, s := range t.subs {
		for _, x := range s.sources {
			set[x] = true
		}
		for _, x := range s.repartitionSources {
			set[x.name] = true
		}
		for _, x := range s.changelogs {
			set[x.name] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// topicsHash stands for StreamsGroup.computeMetadataHash: it changes when
// a topic of the topology appears, goes or changes partition count.
func topicsHash(img *metadatacache.Image, t *streamsTopology) uint64 {
	h := fnv.New64a()
	for _, name := range t.allTopics() {
		h.Write([]byte(name))
		if ti := img.TopicByName(name); ti != nil {
			h.Write(ti.ID[:])
			fmt.Fprintf(h, ":%d;", len(ti.Partitions))
		} else {
			h.Write([]byte{0})
		}
	}
	return h.Sum64()
}

// topicConfigErr is TopicConfigurationException: a status and its text.
type topicConfigErr struct {
	status int8
	msg    string
}

// configuredTopology is ConfiguredTopology.
type configuredTopology struct {
	epoch    int32
	numTasks map[string]int32 // subtopology -> tasks
	// stateful are the subtopologies with state changelog topics
	// (TopologyMetadata.isStateful): only their tasks get standbys
	stateful map[string]bool
	// sourcePartitions is every source / repartition source topic of each
	// subtopology (for IQ and offsets).
	toCreate []topicInfo
	err      *topicConfigErr
}

// ready is ConfiguredTopology.isReady: no error and nothing to create.
func (c *configuredTopology) ready() bool { return c.err == nil && len(c.toCreate) == 0 }

// configureTopics is InternalTopicManager.configureTopics.
func configureTopics(img *metadatacache.Image, t *streamsTopology) *configuredTopology {
	c := &configuredTopology{epoch: t.epoch, numTasks: map[string]int32{}, stateful: map[string]bool{}}
	parts := func(name string) (int32, bool) {
		if ti := img.TopicByName(name); ti != nil {
			return int32(len(ti.Partitions)), true
		}
		return 0, false
	}
	// Missing source topics.
	var missing []string
	for _, s := range t.subs {
		for _, x := range s.sources {
			if _, ok := parts(x); !ok {
				missing = append(missing, x)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = slices.Compact(missing)
		c.err = &topicConfigErr{stMissingSourceTopics, "Source topics " + summarizeTopics(missing) + " are missing."}
		return c
	}
	// Repartition topics' partition counts (RepartitionTopics.setup).
	repart := map[string]int32{}
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.partitions > 0 {
				repart[r.name] = r.partitions
			}
		}
	}
	writers := map[string][]*subtopology{}
	for i := range t.subs {
		for _, sink := range t.subs[i].repartitionSinks {
			writers[sink] = append(writers[sink], &t.subs[i])
		}
	}
	subPartitions := func(s *subtopology) (int32, bool) {
		var n int32
		for _, x := range s.sources {
			p, _ := parts(x)
			n = max(n, p)
		}
		for _, r := range s.repartitionSources {
			p, ok := repart[r.name]
			if !ok {
				return 0, false
			}
			n = max(n, p)
		}
		return n, true
	}
	for range len(t.subs) + 1 {
		progress := false
		for _, s := range t.subs {
			for _, r := range s.repartitionSources {
				if _, ok := repart[r.name]; ok {
					continue
				}
				ws := writers[r.name]
				if len(ws) == 0 {
					c.err = &topicConfigErr{stMissingSourceTopics, "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."}
					return c
				}
				var n int32
				all := true
				for _, w := range ws {
					p, ok := subPartitions(w)
					if !ok {
						all = false
						break
					}
					n = max(n, p)
				}
				if all && n > 0 {
					repart[r.name] = n
					progress = true
				}
			}
		}
		if !progress {
			break
		}
	}
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if _, ok := repart[r.name]; !ok {
				c.err = &topicConfigErr{stMissingSourceTopics, "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."}
				return c
			}
		}
	}
	// Copartitioning (CopartitionedTopicsEnforcer).
	for _, s := range t.subs {
		for _, cg := range s.copartition {
			var srcs []string
			var n int32 = -1
			for _, i := range cg.sources {
				if int(i) < len(s.sources) {
					name := s.sources[i]
					p, _ := parts(name)
					srcs = append(srcs, name)
					if n >= 0 && p != n {
						sort.Strings(srcs)
						c.err = &topicConfigErr{stIncorrectlyPartitioned, fmt.Sprintf("Following topics do not have the same number of partitions: [%s]", strings.Join(srcs, ", "))}
						return c
					}
					n = p
				}
			}
			for _, i := range cg.repartition {
				if int(i) >= len(s.repartitionSources) {
					continue
				}
				r := s.repartitionSources[i]
				if n < 0 {
					n = repart[r.name]
					continue
				}
				if r.partitions > 0 && r.partitions != n {
					c.err = &topicConfigErr{stIncorrectlyPartitioned, fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", r.partitions, r.name, n)}
					return c
				}
				repart[r.name] = n
			}
		}
	}
	// Tasks, changelogs and the internal topics to create or check.
	want := map[string]topicInfo{}
	for _, s := range t.subs {
		n, _ := subPartitions(&s)
		c.numTasks[s.id] = n
		c.stateful[s.id] = len(s.changelogs) > 0
		for _, r := range s.repartitionSources {
			ti := r
			ti.partitions = repart[r.name]
			want[r.name] = ti
		}
		for _, cl := range s.changelogs {
			ti := cl
			ti.partitions = n
			want[cl.name] = ti
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		ti := want[name]
		p, ok := parts(name)
		switch {
		case !ok:
			c.toCreate = append(c.toCreate, ti)
		case p != ti.partitions:
			c.err = &topicConfigErr{stIncorrectlyPartitioned, fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", name, ti.partitions, p)}
			return c
		}
	}
	return c
}

// summarizeTopics is InternalTopicManager.summarizeTopics: the first three
// names joined with ",", then how many more.
func summarizeTopics(names []string) string {
	if len(names) == 0 {
		return "<none>"
	}
	s := strings.Join(names[:min(3, len(names))], ",")
	if len(names) > 3 {
		s += fmt.Sprintf(" and %d additional topics", len(names)-3)
	}
	return s
}
