package group

// The share state of a share group's partitions (KIP-932, Kafka 4.1+):
// before a partition is assigned, the share coordinator must hold its
// state, so the group coordinator initializes it through the Persister
// (InitializeShareGroupState) and tracks it in
// ShareGroupStatePartitionMetadata:
//
//	subscribed, no state ──heartbeat──► initializing ──persister ok──► initialized ──► assignable
//	                                       │   ▲ (retried after group.share.initialize.retry.interval.ms,
//	                                       │   │  or at the next heartbeat once a call failed)
//	                                       └───┘ persister failed
//	initialized ──DeleteShareGroupOffsets / DeleteGroups──► deleting ──persister DeleteState──► gone
//
// The persister is called off the event loop, by the request's goroutine
// after the operation that wrote the initializing (or deleting) record
// returned; its answer is applied by another operation on the loop
// (GroupCoordinatorService.persisterInitialize and
// GroupMetadataManager.initializeShareGroupState / uninitializeShareGroupState).
// No loop ever waits for the share coordinator.

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// persisterTimeout bounds one persister call (Kafka's persister uses the
// inter-broker request timeout).
const persisterTimeout = 30 * time.Second

// shareInit is an InitializeShareGroupState to send for a group, and the
// names of its topics (for the records written when it completes).
type shareInit struct {
	group string
	req   *kmsg.InitializeShareGroupStateRequest
	names map[[16]byte]string
}

// shareInitRequest is maybeCreateInitializeShareGroupStateRequest: the
// partitions of the subscribed topics that have no share state and are
// not being initialized since less than the retry interval become
// initializing. It returns the request and the metadata record to write
// (both nil when there is nothing to do). A topic the group already has
// state for starts its new partitions at offset 0 (all of their records,
// as they were added later); any other starts at -1, which the share
// partition resolves with share.auto.offset.reset when it first loads.
func (s *shard) shareInitRequest(gid string, groupEpoch int32, subs map[string]bool, now int64) (*shareInit, *record) {
	if len(subs) == 0 {
		return nil, nil
	}
	img := s.c.cfg.Image()
	old := s.shareMeta[gid]
	retry := s.c.cfg.ShareInitializeRetryInterval.Milliseconds()
	change := map[[16]byte]initTopic{}
	for _, name := range slices.Sorted(maps.Keys(subs)) {
		ti := img.TopicByName(name)
		if ti == nil || isInternal(name) {
			continue
		}
		t := initTopic{name: name, parts: map[int32]struct{}{}, ts: now}
		for p := range ti.Partitions {
			if old != nil {
				if _, ok := old.initialized[ti.ID].parts[p]; ok {
					continue
				}
				if in, ok := old.initializing[ti.ID]; ok && now-in.ts < retry {
					if _, ok := in.parts[p]; ok {
						continue
					}
				}
			}
			t.parts[p] = struct{}{}
		}
		if len(t.parts) > 0 {
			change[ti.ID] = t
		}
	}
	if len(change) == 0 {
		return nil, nil
	}
	meta := newShareStateMeta()
	if old != nil {
		meta = old.clone()
	}
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = gid
	init := &shareInit{group: gid, req: req, names: map[[16]byte]string{}}
	for _, id := range sortedIDs(change) {
		t := change[id]
		start := int64(-1)
		if old != nil {
			_, a := old.initialized[id]
			_, b := old.initializing[id]
			if a || b {
				start = 0
			}
		}
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = id
		for _, p := range t.sorted() {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p, groupEpoch, start
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		init.names[id] = t.name
		cur, ok := meta.initializing[id]
		if !ok {
			cur = initTopic{name: t.name, parts: map[int32]struct{}{}}
		}
		for p := range t.parts {
			cur.parts[p] = struct{}{}
		}
		cur.ts = now
		meta.initializing[id] = cur
		delete(meta.deleting, id) // the topic has state again
	}
	rec := shareStatePartitionRecord(gid, meta)
	return init, &rec
}

// runShareInit sends an initialization to the persister, off the loop,
// and applies its answer on the loop (GroupCoordinatorService.persisterInitialize
// and handlePersisterInitializeResponse): when every partition succeeded
// they become initialized; when any failed, none does (they stop
// initializing, so the next heartbeat tries again) and the first error is
// returned, which Kafka answers the heartbeat with.
func (c *Coordinator) runShareInit(ctx context.Context, init *shareInit) error {
	if c.cfg.SharePersister == nil {
		// No share coordinator to hold the state: the partitions stay
		// initializing (retried after the interval) and nothing is
		// assignable.
		return kerr.CoordinatorNotAvailable
	}
	pctx, cancel := context.WithTimeout(ctx, persisterTimeout)
	resp, err := c.cfg.SharePersister.InitializeState(pctx, init.req)
	cancel()
	var first error
	if err != nil {
		first = kerr.CoordinatorNotAvailable
	} else {
		answered := map[tp]bool{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				answered[tp{t.TopicID, p.Partition}] = true
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && first == nil {
					first = e
				}
			}
		}
		for _, t := range init.req.Topics {
			for _, p := range t.Partitions {
				if !answered[tp{t.TopicID, p.Partition}] && first == nil {
					first = kerr.UnknownServerError
				}
			}
		}
	}
	parts := map[[16]byte][]int32{}
	for _, t := range init.req.Topics {
		for _, p := range t.Partitions {
			parts[t.TopicID] = append(parts[t.TopicID], p.Partition)
		}
	}
	ok, failed := parts, map[[16]byte][]int32(nil)
	if first != nil {
		ok, failed = nil, parts
		c.log.Info("initializing share group state failed", zap.String("group", init.group), zap.Error(first))
	}
	if werr := c.with(init.group, func(s *shard) error { return s.shareInitDone(init.group, init.names, ok, failed) }); werr != nil {
		c.log.Info("recording share group state initialization failed", zap.String("group", init.group), zap.Error(werr))
	}
	return first
}

// shareInitDone is initializeShareGroupState and
// uninitializeShareGroupState at once: partitions in ok become
// initialized, those in failed stop initializing (a later heartbeat
// retries them).
func (s *shard) shareInitDone(gid string, names map[[16]byte]string, ok, failed map[[16]byte][]int32) error {
	old := s.shareMeta[gid]
	meta := newShareStateMeta()
	if old != nil {
		meta = old.clone()
	}
	changed := false
	drop := func(id [16]byte, ps []int32) {
		t, in := meta.initializing[id]
		if !in {
			return
		}
		for _, p := range ps {
			if _, has := t.parts[p]; has {
				delete(t.parts, p)
				changed = true
			}
		}
		if len(t.parts) == 0 {
			delete(meta.initializing, id)
		}
	}
	for id, ps := range ok {
		drop(id, ps)
		t, in := meta.initialized[id]
		if !in {
			t = initTopic{name: names[id], parts: map[int32]struct{}{}}
		}
		for _, p := range ps {
			if _, has := t.parts[p]; !has {
				t.parts[p] = struct{}{}
				changed = true
			}
		}
		meta.initialized[id] = t
	}
	for id, ps := range failed {
		drop(id, ps)
	}
	if !changed {
		return nil
	}
	return s.apply([]record{shareStatePartitionRecord(gid, meta)})
}

// shareTopicsDeleted is maybeCleanupShareGroupState: deleted topics leave
// every group's state partition metadata (the share coordinator drops
// their state itself).
func (s *shard) shareTopicsDeleted(ids map[[16]byte]bool) {
	for _, gid := range slices.Sorted(maps.Keys(s.shareMeta)) {
		old := s.shareMeta[gid]
		meta := old.clone()
		changed := false
		for id := range ids {
			if _, ok := meta.initializing[id]; ok {
				delete(meta.initializing, id)
				changed = true
			}
			if _, ok := meta.initialized[id]; ok {
				delete(meta.initialized, id)
				changed = true
			}
			if _, ok := meta.deleting[id]; ok {
				delete(meta.deleting, id)
				changed = true
			}
		}
		if changed {
			_ = s.apply([]record{shareStatePartitionRecord(gid, meta)})
		}
	}
}

// ---- group deletion ----

// sharePrepareDelete is the first step of deleting a share group
// (GroupMetadataManager.shareGroupBuildPartitionDeleteRequest): a
// non-empty group is refused, and every partition with state (or being
// initialized, or deleted) moves to the deleting topics, so the
// persister's DeleteState can be retried if the deletion fails halfway.
// It returns nil when the group is not a share group or has no state.
func (s *shard) sharePrepareDelete(gid string) (*kmsg.DeleteShareGroupStateRequest, error) {
	g := s.sgs[gid]
	if g == nil {
		return nil, nil
	}
	if len(g.members) > 0 {
		return nil, kerr.NonEmptyGroup
	}
	old := s.shareMeta[gid]
	if old == nil || old.empty() {
		return nil, nil
	}
	img := s.c.cfg.Image()
	parts := map[[16]byte]map[int32]struct{}{}
	names := map[[16]byte]string{}
	for _, src := range []map[[16]byte]initTopic{old.initialized, old.initializing} {
		for id, t := range src {
			if parts[id] == nil {
				parts[id] = map[int32]struct{}{}
			}
			maps.Copy(parts[id], t.parts)
			names[id] = t.name
		}
	}
	for id, name := range old.deleting {
		if ti := img.TopicByID(id); ti != nil {
			if parts[id] == nil {
				parts[id] = map[int32]struct{}{}
			}
			for p := range ti.Partitions {
				parts[id][p] = struct{}{}
			}
		}
		names[id] = name
	}
	meta := newShareStateMeta()
	for id := range parts {
		meta.deleting[id] = names[id]
	}
	if err := s.apply([]record{shareStatePartitionRecord(gid, meta)}); err != nil {
		return nil, err
	}
	return deleteStateRequest(gid, parts), nil
}

func deleteStateRequest(gid string, parts map[[16]byte]map[int32]struct{}) *kmsg.DeleteShareGroupStateRequest {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = gid
	for _, id := range sortedIDs(parts) {
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = id
		for _, p := range slices.Sorted(maps.Keys(parts[id])) {
			rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
	}
	return req
}

// runDeleteState sends a DeleteShareGroupState off the loop. It returns
// the first error of each topic (nil entries: deleted), or a single error
// for the whole call.
func (c *Coordinator) runDeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (map[[16]byte]error, error) {
	out := map[[16]byte]error{}
	if len(req.Topics) == 0 {
		return out, nil
	}
	if c.cfg.SharePersister == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	pctx, cancel := context.WithTimeout(ctx, persisterTimeout)
	defer cancel()
	resp, err := c.cfg.SharePersister.DeleteState(pctx, req)
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	for _, t := range req.Topics {
		out[t.TopicID] = nil
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if e := kerr.ErrorForCode(p.ErrorCode); e != nil && out[t.TopicID] == nil {
				out[t.TopicID] = e
			}
		}
	}
	return out, nil
}

// deleteShareGroupState runs the persister part of DeleteGroups for a
// share group: the state is deleted before the group's records are
// (GroupCoordinatorService.deleteShareGroups).
func (c *Coordinator) deleteShareGroupState(ctx context.Context, gid string) error {
	var req *kmsg.DeleteShareGroupStateRequest
	if err := c.with(gid, func(s *shard) error {
		var err error
		req, err = s.sharePrepareDelete(gid)
		return err
	}); err != nil {
		return err
	}
	if req == nil {
		return nil
	}
	errs, err := c.runDeleteState(ctx, req)
	if err != nil {
		return err
	}
	for _, id := range sortedIDs(errs) {
		if errs[id] != nil {
			return errs[id]
		}
	}
	return nil
}

// ---- DescribeShareGroupOffsets ----

// DescribeShareGroupOffsets serves one group of DescribeShareGroupOffsets
// v0-1 (GroupCoordinatorService.describeShareGroupOffsets and
// describeShareGroupAllOffsets): each partition's start offset and leader
// epoch as the share coordinator holds them (ReadShareGroupStateSummary).
// Topics nil asks for every partition the group has share state for.
// As Kafka, requested topics the metadata does not know, and partitions
// the share coordinator has no state for (or fails to read), answer start
// offset -1 and leader epoch 0 without an error. Lag (v1, KIP-1226) is
// the partition's latest offset minus the start offset minus the records
// already delivered past it, or -1 when any of them is unknown.
func (c *Coordinator) DescribeShareGroupOffsets(ctx context.Context, g kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	rg.GroupID = g.GroupID
	if g.GroupID == "" {
		rg.ErrorCode = kerr.InvalidGroupID.Code
		return rg
	}
	img := c.cfg.Image()
	type want struct {
		topic string
		id    [16]byte
		parts []int32
		known bool
	}
	var wants []want
	if g.Topics == nil {
		var initialized map[[16]byte]initTopic
		if err := c.with(g.GroupID, func(s *shard) error {
			initialized = map[[16]byte]initTopic{}
			if m := s.shareMeta[g.GroupID]; m != nil {
				for id, t := range m.initialized {
					initialized[id] = t.clone()
				}
			}
			return nil
		}); err != nil {
			rg.ErrorCode = code(err)
			return rg
		}
		for _, id := range sortedIDs(initialized) {
			if ti := img.TopicByID(id); ti != nil {
				wants = append(wants, want{topic: ti.Name, id: id, parts: initialized[id].sorted(), known: true})
			}
		}
	} else {
		for _, t := range g.Topics {
			w := want{topic: t.Topic, parts: t.Partitions}
			if ti := img.TopicByName(t.Topic); ti != nil {
				w.id, w.known = ti.ID, true
			}
			wants = append(wants, w)
		}
	}
	rg.Topics = []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	sreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sreq.GroupID = g.GroupID
	for _, w := range wants {
		if !w.known || len(w.parts) == 0 {
			continue
		}
		rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		rt.TopicID = w.id
		for _, p := range w.parts {
			rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		sreq.Topics = append(sreq.Topics, rt)
	}
	summary := map[tp]kmsg.ReadShareGroupStateSummaryResponseTopicPartition{}
	if len(sreq.Topics) > 0 {
		if c.cfg.SharePersister == nil {
			rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return rg
		}
		pctx, cancel := context.WithTimeout(ctx, persisterTimeout)
		resp, err := c.cfg.SharePersister.ReadStateSummary(pctx, sreq)
		cancel()
		if err != nil {
			rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return rg
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				summary[tp{t.TopicID, p.Partition}] = p
			}
		}
	}
	for _, w := range wants {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic, rt.TopicID = w.topic, w.id
		for _, p := range w.parts {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, 0, -1
			if sp, ok := summary[tp{w.id, p}]; ok && sp.ErrorCode == 0 {
				rp.StartOffset, rp.LeaderEpoch = sp.StartOffset, sp.LeaderEpoch
				lag, err := c.shareLag(ctx, w.id, p, sp)
				if err != nil {
					// The latest offset could not be read: Kafka answers
					// the partition with that error only.
					rp = kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.ErrorCode = p, code(err)
					if ke, ok := err.(*kerr.Error); ok {
						rp.ErrorMessage = &ke.Description
					}
				}
				rp.Lag = lag
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

// shareLag is computeShareGroupLagAndBuildResponse for one partition:
// latest offset - start offset - delivery complete count, -1 when the
// start offset or the count is unknown (shouldComputeSharePartitionLag),
// or the error reading the latest offset.
func (c *Coordinator) shareLag(ctx context.Context, id [16]byte, p int32, sp kmsg.ReadShareGroupStateSummaryResponseTopicPartition) (int64, error) {
	if sp.StartOffset == -1 || sp.DeliveryCompleteCount == -1 || c.cfg.LatestOffset == nil {
		return -1, nil
	}
	latest, err := c.cfg.LatestOffset(ctx, id, p)
	if err != nil {
		return -1, err
	}
	return latest - sp.StartOffset - int64(sp.DeliveryCompleteCount), nil
}

func strp(s string) *string { return &s }

// ---- AlterShareGroupOffsets ----

// AlterShareGroupOffsets serves AlterShareGroupOffsets v0
// (GroupMetadataManager.alterShareGroupOffsets, then persisterInitialize):
// only an empty (or not yet existing) share group's start offsets can be
// set; the partitions are initialized again with the given start offsets
// and the group epoch as state epoch, so the share coordinator replaces
// their state.
func (c *Coordinator) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	r := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	topErr := func(err error) *kmsg.AlterShareGroupOffsetsResponse {
		r.ErrorCode = code(err)
		if me, ok := err.(*msgError); ok {
			r.ErrorMessage = &me.msg
		} else if ke, ok := err.(*kerr.Error); ok {
			r.ErrorMessage = &ke.Description
		}
		r.Topics = nil
		return r
	}
	if req.GroupID == "" {
		return topErr(kerr.InvalidGroupID)
	}
	img := c.cfg.Image()
	var init *shareInit
	if err := c.with(req.GroupID, func(s *shard) error {
		if s.groups[req.GroupID] != nil || s.cgs[req.GroupID] != nil {
			return errMsg(kerr.GroupIDNotFound, "Group %s is not a share group.", req.GroupID)
		}
		epoch := int32(0)
		if g := s.sgs[req.GroupID]; g != nil {
			if len(g.members) > 0 {
				return kerr.NonEmptyGroup
			}
			epoch = g.epoch
		}
		meta := newShareStateMeta()
		if old := s.shareMeta[req.GroupID]; old != nil {
			meta = old.clone()
		}
		ireq := kmsg.NewPtrInitializeShareGroupStateRequest()
		ireq.GroupID = req.GroupID
		init = &shareInit{group: req.GroupID, req: ireq, names: map[[16]byte]string{}}
		now := s.nowMs()
		for _, t := range req.Topics {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			ti := img.TopicByName(t.Topic)
			if ti != nil {
				rt.TopicID = ti.ID
			}
			it := kmsg.NewInitializeShareGroupStateRequestTopic()
			if ti != nil {
				it.TopicID = ti.ID
			}
			cur := initTopic{name: t.Topic, parts: map[int32]struct{}{}, ts: now}
			if ti != nil {
				if prev, ok := meta.initializing[ti.ID]; ok {
					cur = prev
					cur.ts = now
				}
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				if ti == nil || ti.Partition(p.Partition) == nil {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					rp.ErrorMessage = strp(kerr.UnknownTopicOrPartition.Description)
				} else {
					ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
					ip.Partition, ip.StateEpoch, ip.StartOffset = p.Partition, epoch, p.StartOffset
					it.Partitions = append(it.Partitions, ip)
					cur.parts[p.Partition] = struct{}{}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			if len(it.Partitions) > 0 {
				ireq.Topics = append(ireq.Topics, it)
				init.names[ti.ID] = ti.Name
				meta.initializing[ti.ID] = cur
				delete(meta.deleting, ti.ID)
			}
			r.Topics = append(r.Topics, rt)
		}
		if len(ireq.Topics) == 0 {
			init = nil
			return nil
		}
		return s.apply([]record{shareStatePartitionRecord(req.GroupID, meta)})
	}); err != nil {
		return topErr(err)
	}
	if init == nil {
		return r
	}
	// A failed initialization fails every partition it carried
	// (GroupCoordinatorService.buildErrorResponse).
	if err := c.runShareInit(ctx, init); err != nil {
		for i := range r.Topics {
			rt := &r.Topics[i]
			for j := range rt.Partitions {
				if rp := &rt.Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode = code(err)
					if ke, ok := err.(*kerr.Error); ok {
						rp.ErrorMessage = &ke.Description
					}
				}
			}
		}
	}
	return r
}

// ---- DeleteShareGroupOffsets ----

// DeleteShareGroupOffsets serves DeleteShareGroupOffsets v0
// (GroupMetadataManager.sharePartitionsEligibleForOffsetDeletion, the
// persister's DeleteState, then completeDeleteShareGroupOffsets): an empty
// share group's state of whole topics is deleted; the topics are
// "deleting" in between, so a failed deletion can be retried.
func (c *Coordinator) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	r := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	topErr := func(err error) *kmsg.DeleteShareGroupOffsetsResponse {
		r.ErrorCode = code(err)
		if me, ok := err.(*msgError); ok {
			r.ErrorMessage = &me.msg
		} else if ke, ok := err.(*kerr.Error); ok {
			r.ErrorMessage = &ke.Description
		}
		r.Topics = nil
		return r
	}
	if req.GroupID == "" {
		return topErr(kerr.InvalidGroupID)
	}
	img := c.cfg.Image()
	var dreq *kmsg.DeleteShareGroupStateRequest
	names := map[[16]byte]string{}
	if err := c.with(req.GroupID, func(s *shard) error {
		g := s.sgs[req.GroupID]
		if g == nil {
			if s.groups[req.GroupID] != nil || s.cgs[req.GroupID] != nil {
				return errMsg(kerr.GroupIDNotFound, "Group %s is not a share group.", req.GroupID)
			}
			return errMsg(kerr.GroupIDNotFound, "Share group %s not found.", req.GroupID)
		}
		if len(g.members) > 0 {
			return kerr.NonEmptyGroup
		}
		meta := newShareStateMeta()
		if old := s.shareMeta[req.GroupID]; old != nil {
			meta = old.clone()
		}
		parts := map[[16]byte]map[int32]struct{}{}
		for _, t := range req.Topics {
			ti := img.TopicByName(t.Topic)
			if ti == nil {
				rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, kerr.UnknownTopicOrPartition.Code
				rt.ErrorMessage = strp(kerr.UnknownTopicOrPartition.Description)
				r.Topics = append(r.Topics, rt)
				continue
			}
			switch in, isInit := meta.initialized[ti.ID]; {
			case isInit:
				parts[ti.ID] = maps.Clone(in.parts)
				delete(meta.initialized, ti.ID)
				meta.deleting[ti.ID] = ti.Name
			case meta.deleting[ti.ID] != "":
				parts[ti.ID] = map[int32]struct{}{}
				for p := range ti.Partitions {
					parts[ti.ID][p] = struct{}{}
				}
			default:
				rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
				rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, ti.ID, kerr.UnknownTopicOrPartition.Code
				rt.ErrorMessage = strp("There is no offset information to delete.")
				r.Topics = append(r.Topics, rt)
				continue
			}
			names[ti.ID] = ti.Name
		}
		if len(parts) == 0 {
			return nil
		}
		if err := s.apply([]record{shareStatePartitionRecord(req.GroupID, meta)}); err != nil {
			return err
		}
		dreq = deleteStateRequest(req.GroupID, parts)
		return nil
	}); err != nil {
		return topErr(err)
	}
	if dreq == nil {
		return r
	}
	errs, err := c.runDeleteState(ctx, dreq)
	if err != nil {
		return topErr(err)
	}
	var done [][16]byte
	for _, id := range sortedIDs(names) {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.TopicID = names[id], id
		if e := errs[id]; e != nil {
			rt.ErrorCode = code(e)
			if ke, ok := e.(*kerr.Error); ok {
				rt.ErrorMessage = &ke.Description
			}
		} else {
			done = append(done, id)
		}
		r.Topics = append(r.Topics, rt)
	}
	if len(done) > 0 {
		if err := c.with(req.GroupID, func(s *shard) error {
			old := s.shareMeta[req.GroupID]
			if old == nil {
				return nil
			}
			meta := old.clone()
			for _, id := range done {
				delete(meta.deleting, id)
			}
			return s.apply([]record{shareStatePartitionRecord(req.GroupID, meta)})
		}); err != nil {
			return topErr(err)
		}
	}
	return r
}

// ShareGroupDescribe serves ShareGroupDescribe v1.
func (c *Coordinator) ShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	r := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = id
		rg.AuthorizedOperations = -2147483648
		if id == "" {
			rg.ErrorCode = kerr.InvalidGroupID.Code
		} else if err := c.with(id, func(s *shard) error { s.describeShareGroup(id, &rg); return nil }); err != nil {
			rg.ErrorCode = code(err)
		}
		r.Groups = append(r.Groups, rg)
	}
	return r
}

// ShareGroupHeartbeat serves ShareGroupHeartbeat v1 (KIP-932). When the
// heartbeat found partitions without share state it initializes them
// through the persister before answering, as Kafka's
// GroupCoordinatorService.persisterInitialize does; the event loop is
// free meanwhile. A failed initialization answers the heartbeat with the
// persister's error (the member's state was written: it retries with the
// same epoch).
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ShareGroupHeartbeatResponse {
	fail := func(err error) *kmsg.ShareGroupHeartbeatResponse {
		r := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		r.ErrorCode = code(err)
		if me, ok := err.(*msgError); ok {
			r.ErrorMessage = &me.msg
		}
		return r
	}
	if err := validateShareHeartbeat(req); err != nil {
		return fail(err)
	}
	var resp *kmsg.ShareGroupHeartbeatResponse
	var init *shareInit
	if err := c.with(req.GroupID, func(s *shard) error {
		var err error
		resp, init, err = s.shareHeartbeat(req, clientID, clientHost)
		return err
	}); err != nil {
		return fail(err)
	}
	// Without a persister the answer stays as it is: the partitions wait
	// initializing and nothing is assigned.
	if init != nil && c.cfg.SharePersister != nil {
		if err := c.runShareInit(ctx, init); err != nil {
			r := fail(err)
			if ke, ok := err.(*kerr.Error); ok {
				r.ErrorMessage = &ke.Description
			}
			return r
		}
	}
	resp.Version = req.Version
	return resp
}

// validateShareHeartbeat is GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid.
// Since KIP-1082 the client makes up its member id, so it is required on
// every heartbeat.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) error {
	inv := func(msg string) error { return &msgError{err: kerr.InvalidRequest, msg: msg} }
	switch {
	case req.MemberID == "":
		return inv("MemberId can't be empty.")
	case req.GroupID == "":
		return inv("GroupId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return inv("RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return inv("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < leaveGroupEpoch:
		return inv("MemberEpoch is invalid.")
	}
	return nil
}

// onShareTopicsDeleted posts the share groups' cleanup of topics deleted
// between two images to every loaded partition.
func (c *Coordinator) onShareTopicsDeleted(old, img *metadatacache.Image) {
	ids := map[[16]byte]bool{}
	for _, t := range old.Topics() {
		if nt := img.TopicByID(t.ID); nt == nil {
			ids[t.ID] = true
		}
	}
	if len(ids) == 0 {
		return
	}
	for _, p := range c.rt.Partitions() {
		c.rt.Post(p, "delete-topic-share-state", func(s *shard) error {
			s.shareTopicsDeleted(ids)
			return nil
		})
	}
}
