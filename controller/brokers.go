package controller

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// BrokerRegistration (62) v0-4, BrokerHeartbeat (63) v0-2, UnregisterBroker
// (64) v0 and AllocateProducerIds (67) v0, as Kafka's ClusterControlManager,
// BrokerHeartbeatManager, ReplicationControlManager and
// ProducerIdControlManager decide them.
//
// A broker's life: BrokerRegistration writes a RegisterBrokerRecord, fenced,
// whose broker epoch is the offset the record is written at. Heartbeats keep
// its session alive; the first heartbeat whose CurrentMetadataOffset reached
// the registration record's offset unfences it (BrokerRegistrationChangeRecord,
// plus leaders for partitions that had none). A broker that stops
// heartbeating for broker.session.timeout.ms is fenced and loses ISR
// membership and leadership. WantShutDown takes an unfenced broker through
// controlled shutdown (leadership moves away) to SHUTDOWN_NOW.

// session is the controller's in-memory heartbeat state of one broker
// (BrokerHeartbeatState). Guarded by c.mu.
type session struct {
	lastContact    time.Time
	metadataOffset int64
	// shutdownOffset is the offset at which controlled shutdown completes
	// (-1: not in controlled shutdown).
	shutdownOffset int64
}

const producerIDBlockSize = 1000

// controlState is BrokerControlState.
type controlState int

const (
	stateFenced controlState = iota
	stateUnfenced
	stateControlledShutdown
	stateShutdownNow
)

func (s controlState) fenced() bool         { return s == stateFenced || s == stateShutdownNow }
func (s controlState) shouldShutDown() bool { return s == stateShutdownNow }

func (s controlState) String() string {
	return [...]string{"FENCED", "UNFENCED", "CONTROLLED_SHUTDOWN", "SHUTDOWN_NOW"}[s]
}

// sessionLocked returns broker id's session, creating a fresh one. c.mu must be held.
func (c *Controller) sessionLocked(id int32) *session {
	ss := c.mu.sessions[id]
	if ss == nil {
		ss = &session{lastContact: c.cfg.Now(), metadataOffset: -1, shutdownOffset: -1}
		c.mu.sessions[id] = ss
	}
	return ss
}

// hasValidSession: an unfenced broker heard from within the session timeout.
func (c *Controller) hasValidSession(b *brokerState) bool {
	if b.fenced {
		return false
	}
	ss := c.mu.sessions[b.id]
	return ss != nil && !ss.lastContact.Add(c.cfg.SessionTimeout).Before(c.cfg.Now())
}

func (c *Controller) registerBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	fail := func(e *apiError) kmsg.Response {
		c.log.Info("broker registration refused", zap.Int32("broker", req.BrokerID), zap.Int16("version", req.Version), zap.Int("log_dirs", len(req.LogDirs)), zap.Stringer("error", e))
		resp.ErrorCode = e.code()
		return resp
	}
	if c.cfg.ClusterID != "" && req.ClusterID != c.cfg.ClusterID {
		return fail(newAPIError(kerr.InconsistentClusterID, "Expected cluster ID %s, but got cluster ID %s", c.cfg.ClusterID, req.ClusterID))
	}
	var (
		rec      *metadatacache.RegisterBrokerRecord
		apiErr   *apiError
		newInc   bool
		prevEnd  int64
		shutdown []metadatacache.Record
		clean    bool
	)
	c.view(func(s *state) {
		mv := s.metadataVersion()
		existing := s.brokers[req.BrokerID]
		if existing != nil && c.hasValidSession(existing) && existing.incarnation != req.IncarnationID {
			apiErr = newAPIError(kerr.DuplicateBrokerRegistration, "Another broker is registered with that broker id.")
			return
		}
		if req.IsMigratingZkBroker {
			apiErr = newAPIError(kerr.BrokerIDNotRegistered, "Controller does not support registering ZK brokers.")
			return
		}
		if directoryAssignmentSupported(mv) {
			if apiErr = validateLogDirs(s, req.BrokerID, req.LogDirs); apiErr != nil {
				return
			}
		}
		rec = metadatacache.NewRegisterBrokerRecord()
		rec.SetVersion(registerBrokerRecordVersion(mv))
		rec.BrokerID = req.BrokerID
		rec.IsMigratingZkBroker = false
		rec.IncarnationID = req.IncarnationID
		rec.Rack = req.Rack
		rec.EndPoints = []metadatacache.BrokerEndpoint{}
		for _, l := range req.Listeners {
			rec.EndPoints = append(rec.EndPoints, metadatacache.BrokerEndpoint{
				Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol,
			})
		}
		rec.Features, apiErr = checkBrokerFeatures(req.BrokerID, s.features, req.Features)
		if apiErr != nil {
			return
		}
		if directoryAssignmentSupported(mv) {
			rec.LogDirs = append([][16]byte(nil), req.LogDirs...)
		}
		newInc = existing == nil || existing.incarnation != req.IncarnationID
		if newInc {
			// A new incarnation: the previous one is gone. Its clean
			// shutdown is proven by the broker epoch it kept
			// (PreviousBrokerEpoch, v3+, read from .kafka_cleanshutdown)
			// matching the registration's (ClusterControlManager).
			stored := int64(-2)
			if existing != nil {
				stored = existing.epoch
			}
			clean = req.Version >= 3 && stored == req.PreviousBrokerEpoch
			shutdown = brokerShutdownRecords(s, mv, req.BrokerID, clean)
			// The epoch is the offset the batch starts at, as Kafka uses
			// nextWriteOffset (the shutdown records come first).
			rec.BrokerEpoch = c.mu.nextWriteOffset
			rec.Fenced = true
			rec.InControlledShutdown = false
		} else {
			rec.BrokerEpoch = existing.epoch
			rec.Fenced = existing.fenced
			rec.InControlledShutdown = existing.inControlledShutdown
		}
		prevEnd = s.lastOffset
	})
	if apiErr != nil {
		return fail(apiErr)
	}
	if _, err := c.write(ctx, append(shutdown, rec)); err != nil {
		return fail(defaultAPIError(kerr.NotController))
	}
	if newInc {
		delete(c.mu.sessions, req.BrokerID)
	}
	ss := c.sessionLocked(req.BrokerID)
	ss.lastContact = c.cfg.Now()
	if newInc {
		c.log.Info("registered a new broker incarnation", zap.Int32("broker", req.BrokerID),
			zap.Int64("broker_epoch", rec.BrokerEpoch), zap.Int64("previous_offset", prevEnd),
			zap.Bool("clean_shutdown", clean), zap.Int("shutdown_records", len(shutdown)))
	}
	resp.BrokerEpoch = rec.BrokerEpoch
	return resp
}

// validateLogDirs checks the registration's log directories (MV >= 3.7-IV2).
func validateLogDirs(s *state, id int32, dirs [][16]byte) *apiError {
	if len(dirs) == 0 {
		return newAPIError(kerr.InvalidRegistration, "No directories specified in request")
	}
	seen := make(map[[16]byte]bool, len(dirs))
	for _, d := range dirs {
		if metadatacache.IsReservedDirectoryID(d) {
			return newAPIError(kerr.InvalidRegistration, "Reserved directory ID in request")
		}
		if seen[d] {
			return newAPIError(kerr.InvalidRegistration, "Duplicate directory ID in request")
		}
		seen[d] = true
	}
	for _, other := range s.brokers {
		if other.id == id {
			continue
		}
		for _, d := range other.logDirs {
			if seen[d] {
				return newAPIError(kerr.InvalidRegistration, "Broker %d is already registered with directory %s", other.id, uuidString(d))
			}
		}
	}
	return nil
}

// checkBrokerFeatures checks that the broker supports every finalized
// feature (ClusterControlManager.processRegistrationFeature) and returns the
// record's feature list.
func checkBrokerFeatures(id int32, finalized map[string]int16, req []kmsg.BrokerRegistrationRequestFeature) ([]metadatacache.BrokerFeature, *apiError) {
	out := make([]metadatacache.BrokerFeature, 0, len(req)+1)
	check := func(name string, lo, hi int16) *apiError {
		def := int16(0)
		if name == featureMetadataVersion {
			def = 1
		}
		level, ok := finalized[name]
		if !ok {
			level = def
		}
		if level < lo || level > hi {
			return newAPIError(kerr.UnsupportedVersion, "Unable to register because the broker does not support finalized version %d of %s. The broker wants a version between %d and %d, inclusive.", level, name, lo, hi)
		}
		return nil
	}
	sent := make(map[string]bool, len(req))
	for _, f := range req {
		if e := check(f.Name, f.MinSupportedVersion, f.MaxSupportedVersion); e != nil {
			return nil, e
		}
		sent[f.Name] = true
		out = append(out, metadatacache.BrokerFeature{Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion})
	}
	if !sent[featureMetadataVersion] {
		// Brokers that send no metadata.version range only support 3.0-IV1 (level 1).
		if e := check(featureMetadataVersion, 1, 1); e != nil {
			return nil, e
		}
		out = append(out, metadatacache.BrokerFeature{Name: featureMetadataVersion, MinSupportedVersion: 1, MaxSupportedVersion: 1})
	}
	for name, level := range finalized {
		if level != 0 && !sent[name] && name != featureMetadataVersion {
			if e := check(name, 0, 0); e != nil {
				return nil, e
			}
		}
	}
	_ = id
	return out, nil
}

// checkBrokerEpoch is ClusterControlManager.checkBrokerEpoch.
func checkBrokerEpoch(s *state, id int32, epoch int64) *apiError {
	b := s.brokers[id]
	if b == nil {
		return newAPIError(kerr.StaleBrokerEpoch, "No broker registration found for broker id %d", id)
	}
	if b.epoch != epoch {
		return newAPIError(kerr.StaleBrokerEpoch, "Expected broker epoch %d, but got broker epoch %d", b.epoch, epoch)
	}
	return nil
}

func (c *Controller) brokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	var (
		apiErr         *apiError
		cur, next      controlState
		recs           []metadatacache.Record
		registerOffset int64
	)
	id := req.BrokerID
	c.view(func(s *state) {
		b := s.brokers[id]
		if b == nil {
			apiErr = newAPIError(kerr.StaleBrokerEpoch, "Receive a heartbeat from broker %d before registration", id)
			return
		}
		if apiErr = checkBrokerEpoch(s, id, req.BrokerEpoch); apiErr != nil {
			return
		}
		registerOffset = b.registerOffset
		ss := c.sessionLocked(id)
		cur = stateFenced
		switch {
		case ss.shutdownOffset >= 0 || b.inControlledShutdown:
			cur = stateControlledShutdown
		case !b.fenced:
			cur = stateUnfenced
		}
		next = c.nextBrokerState(s, id, cur, ss, req, registerOffset)
		if cur != next {
			mv := s.metadataVersion()
			switch next {
			case stateFenced, stateShutdownNow:
				recs = brokerFencedRecords(s, mv, id)
			case stateUnfenced:
				recs = brokerUnfencedRecords(s, mv, id, b.epoch)
			case stateControlledShutdown:
				recs = brokerControlledShutdownRecords(s, mv, id, b.epoch)
			}
		}
		// KIP-858: a newly failed log dir moves its partitions off the
		// broker (handleDirectoriesOffline, logdirs.go).
		if mv := s.metadataVersion(); directoryAssignmentSupported(mv) {
			if dr := directoriesOfflineRecords(s, mv, id, b.epoch, req.OfflineLogDirs); len(dr) > 0 {
				recs = append(recs, dr...)
				online := dr[len(dr)-1].(*metadatacache.BrokerRegistrationChangeRecord).LogDirs
				c.log.Warn("directories in broker marked offline", zap.Int32("broker", id),
					zap.Int("partition_changes", len(dr)-1), zap.Int("remaining_dirs", len(online)))
			}
		}
		if r := c.cordonedDirsRecord(s.metadataVersion(), id, b.epoch, req); r != nil {
			recs = append(recs, r)
		}
	})
	if apiErr != nil {
		resp.ErrorCode = apiErr.code()
		return resp
	}
	ss := c.sessionLocked(id)
	ss.lastContact = c.cfg.Now()
	ss.metadataOffset = req.CurrentMetadataOffset
	last, err := c.write(ctx, recs)
	if err != nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	switch {
	case next == stateControlledShutdown && ss.shutdownOffset < 0:
		ss.shutdownOffset = last
	case next != stateControlledShutdown:
		ss.shutdownOffset = -1
	}
	if cur != next {
		c.log.Info("broker state changed", zap.Int32("broker", id), zap.Stringer("from", cur), zap.Stringer("to", next),
			zap.Int64("metadata_offset", req.CurrentMetadataOffset), zap.Int64("register_offset", registerOffset))
	}
	resp.IsCaughtUp = req.CurrentMetadataOffset >= registerOffset
	resp.IsFenced = next.fenced()
	resp.ShouldShutdown = next.shouldShutDown()
	return resp
}

// cordonedDirsRecord is ReplicationControlManager.handleDirectoriesCordoned:
// from metadata.version 4.3-IV0 (KIP-1066) a heartbeat's CordonedLogDirs
// (v2; null before the broker reaches RECOVERY) that differs from the
// registration's, as a set, or is the first the broker reports, becomes a
// BrokerRegistrationChangeRecord v3.
func (c *Controller) cordonedDirsRecord(mv int16, id int32, epoch int64, req *kmsg.BrokerHeartbeatRequest) metadatacache.Record {
	if mv < metadatacache.MV4_3_IV0 || req.Version < 2 || req.CordonedLogDirs == nil {
		return nil
	}
	reg := c.cache.Image().Broker(id)
	if reg == nil || reg.CordonedDirectories != nil && sameDirSet(reg.CordonedDirectories, req.CordonedLogDirs) {
		return nil
	}
	r := metadatacache.NewBrokerRegistrationChangeRecord()
	r.SetVersion(3)
	r.BrokerID, r.BrokerEpoch = id, epoch
	r.CordonedLogDirs = append([][16]byte{}, req.CordonedLogDirs...)
	return r
}

func sameDirSet(a, b [][16]byte) bool {
	set := make(map[[16]byte]bool, len(a))
	for _, d := range a {
		set[d] = true
	}
	other := make(map[[16]byte]bool, len(b))
	for _, d := range b {
		if !set[d] {
			return false
		}
		other[d] = true
	}
	return len(other) == len(set)
}

// nextBrokerState is BrokerHeartbeatManager.calculateNextBrokerState.
func (c *Controller) nextBrokerState(s *state, id int32, cur controlState, ss *session, req *kmsg.BrokerHeartbeatRequest, registerOffset int64) controlState {
	switch cur {
	case stateFenced:
		if req.WantShutdown {
			return stateShutdownNow
		}
		if !req.WantFence && req.CurrentMetadataOffset >= registerOffset {
			return stateUnfenced
		}
		return stateFenced
	case stateUnfenced:
		if req.WantFence {
			if req.WantShutdown {
				return stateShutdownNow
			}
			return stateFenced
		}
		if req.WantShutdown {
			if hasLeaderships(s, id) {
				return stateControlledShutdown
			}
			return stateShutdownNow
		}
		return stateUnfenced
	case stateControlledShutdown:
		if hasLeaderships(s, id) {
			return stateControlledShutdown
		}
		if ss.shutdownOffset <= c.lowestActiveOffset(s) {
			return stateShutdownNow
		}
		return stateControlledShutdown
	}
	return stateShutdownNow
}

// lowestActiveOffset is the lowest metadata offset an active broker
// reported (math.MaxInt64 when there is none).
func (c *Controller) lowestActiveOffset(s *state) int64 {
	low := int64(math.MaxInt64)
	for id, ss := range c.mu.sessions {
		if s.active(id) && ss.shutdownOffset < 0 && ss.metadataOffset < low {
			low = ss.metadataOffset
		}
	}
	return low
}

func hasLeaderships(s *state, id int32) bool {
	for _, t := range s.topics {
		for _, p := range t.parts {
			if p.leader == id {
				return true
			}
		}
	}
	return false
}

// brokerFencedRecords is handleBrokerFenced: the broker leaves every ISR
// (and leadership), then it is fenced.
func brokerFencedRecords(s *state, mv int16, id int32) []metadatacache.Record {
	recs := leaderAndIsrUpdates(s, mv, id, -1, -1, func(p *partitionState) bool { return contains(p.isr, id) })
	b := s.brokers[id]
	if mv >= mv3_3_IV2 {
		r := metadatacache.NewBrokerRegistrationChangeRecord()
		r.SetVersion(0)
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, b.epoch, metadatacache.FencingChangeFence
		return append(recs, r)
	}
	r := metadatacache.NewFenceBrokerRecord()
	r.SetVersion(0)
	r.ID, r.Epoch = id, b.epoch
	return append(recs, r)
}

// brokerShutdownRecords is ReplicationControlManager.handleBrokerShutdown,
// for a broker registering a new incarnation: with ELR enabled and no
// proof of a clean shutdown, the broker leaves every ISR and every ELR
// (KIP-966: its log may have lost acknowledged records, so it must not be
// elected from the ELR); otherwise it leaves every ISR, as a fenced broker
// does.
func brokerShutdownRecords(s *state, mv int16, id int32, clean bool) []metadatacache.Record {
	if s.elrEnabled() && !clean {
		recs := leaderAndIsrUpdates(s, mv, -1, -1, id, func(p *partitionState) bool { return contains(p.isr, id) })
		return append(recs, leaderAndIsrUpdates(s, mv, -1, -1, id, func(p *partitionState) bool { return contains(p.elr, id) })...)
	}
	return leaderAndIsrUpdates(s, mv, id, -1, -1, func(p *partitionState) bool { return contains(p.isr, id) })
}

// brokerUnfencedRecords is handleBrokerUnfenced: the broker is unfenced,
// then partitions without a leader elect one (the broker counts as active).
func brokerUnfencedRecords(s *state, mv int16, id int32, epoch int64) []metadatacache.Record {
	var recs []metadatacache.Record
	if mv >= mv3_3_IV2 {
		r := metadatacache.NewBrokerRegistrationChangeRecord()
		r.SetVersion(0)
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, epoch, metadatacache.FencingChangeUnfence
		recs = append(recs, r)
	} else {
		r := metadatacache.NewUnfenceBrokerRecord()
		r.SetVersion(0)
		r.ID, r.Epoch = id, epoch
		recs = append(recs, r)
	}
	return append(recs, leaderAndIsrUpdates(s, mv, -1, id, -1, func(p *partitionState) bool { return p.leader == -1 })...)
}

// brokerControlledShutdownRecords is handleBrokerInControlledShutdown.
func brokerControlledShutdownRecords(s *state, mv int16, id int32, epoch int64) []metadatacache.Record {
	var recs []metadatacache.Record
	if mv >= mv3_3_IV3 && !s.brokers[id].inControlledShutdown {
		r := metadatacache.NewBrokerRegistrationChangeRecord()
		r.SetVersion(1)
		r.BrokerID, r.BrokerEpoch, r.InControlledShutdown = id, epoch, metadatacache.ControlledShutdownChangeIn
		recs = append(recs, r)
	}
	return append(recs, leaderAndIsrUpdates(s, mv, id, -1, -1, func(p *partitionState) bool { return contains(p.isr, id) })...)
}

func (c *Controller) unregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	var recs []metadatacache.Record
	c.view(func(s *state) {
		b := s.brokers[req.BrokerID]
		if b == nil {
			return
		}
		mv := s.metadataVersion()
		id := req.BrokerID
		recs = leaderAndIsrUpdates(s, mv, id, -1, -1, func(p *partitionState) bool { return contains(p.isr, id) || contains(p.elr, id) })
		r := metadatacache.NewUnregisterBrokerRecord()
		r.SetVersion(0)
		r.BrokerID, r.BrokerEpoch = id, b.epoch
		recs = append(recs, r)
	})
	if recs == nil {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = newAPIError(kerr.BrokerIDNotRegistered, "Broker ID %d is not currently registered", req.BrokerID).msg // ClusterControlManager's
		return resp
	}
	if _, err := c.write(ctx, recs); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	delete(c.mu.sessions, req.BrokerID)
	c.log.Info("unregistered broker", zap.Int32("broker", req.BrokerID))
	return resp
}

// fenceStaleBrokers fences, one batch at a time, every unfenced broker
// whose session expired (maybeFenceOneStaleBroker). It returns when the
// next session expires (zero: none, or not active), for the caller to check
// again then, as QuorumController.rescheduleMaybeFenceStaleBrokers schedules
// the check at the earliest expiry rather than polling.
func (c *Controller) fenceStaleBrokers() (next time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.activeLocked() {
		var (
			stale int32 = -1
			recs  []metadatacache.Record
		)
		now := c.cfg.Now()
		next = time.Time{}
		c.view(func(s *state) {
			for _, id := range s.brokerIDs() {
				b := s.brokers[id]
				if b.fenced {
					continue
				}
				ss := c.sessionLocked(id)
				exp := ss.lastContact.Add(c.cfg.SessionTimeout)
				if exp.Before(now) {
					stale = id
					recs = brokerFencedRecords(s, s.metadataVersion(), id)
					return
				}
				if next.IsZero() || exp.Before(next) {
					next = exp
				}
			}
		})
		if stale < 0 {
			return next
		}
		c.log.Info("fencing broker because its session has timed out", zap.Int32("broker", stale))
		if _, err := c.write(context.Background(), recs); err != nil {
			return
		}
		if ss := c.mu.sessions[stale]; ss != nil {
			ss.shutdownOffset = -1
		}
	}
	return time.Time{}
}

func (c *Controller) allocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	var (
		apiErr *apiError
		first  int64
	)
	c.view(func(s *state) {
		if apiErr = checkBrokerEpoch(s, req.BrokerID, req.BrokerEpoch); apiErr != nil {
			return
		}
		first = s.nextProducerID
		if first > math.MaxInt64-producerIDBlockSize {
			apiErr = newAPIError(kerr.UnknownServerError, "Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit")
		}
	})
	if apiErr != nil {
		resp.ErrorCode = apiErr.code()
		return resp
	}
	r := metadatacache.NewProducerIdsRecord()
	r.SetVersion(0)
	r.BrokerID, r.BrokerEpoch, r.NextProducerID = req.BrokerID, req.BrokerEpoch, first+producerIDBlockSize
	if _, err := c.write(ctx, []metadatacache.Record{r}); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	resp.ProducerIDStart = first
	resp.ProducerIDLen = producerIDBlockSize
	return resp
}
