package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// lifecycle registers this broker with the active controller and keeps its
// session alive with heartbeats, as Kafka's BrokerLifecycleManager does:
//
//	register (BrokerRegistration) -> fenced
//	heartbeat with the applied metadata offset -> unfenced once caught up
//	heartbeat with WantShutDown on shutdown -> controlled shutdown
//
// One goroutine owns the state below; unfenced is closed the first time the
// controller reports the broker unfenced.
type lifecycle struct {
	channel  *controllerChannel
	logger   *zap.Logger
	interval time.Duration
	// registration is the request to (re)send, fully filled but for the
	// previous epoch.
	registration *kmsg.BrokerRegistrationRequest
	// metadataOffset is the offset of the last metadata record this broker
	// applied.
	metadataOffset func() int64
	// waitMetadata, when set, blocks until the broker has applied the
	// metadata log up to an offset. While fenced, the next heartbeat goes
	// out as soon as the broker has replayed its own registration (whose
	// offset is its broker epoch), so it is unfenced without waiting a whole
	// heartbeat interval.
	waitMetadata func(ctx context.Context, offset int64) error
	// offlineDirs, when set, lists the directory ids of failed log dirs
	// (KIP-112), sent in every heartbeat.
	offlineDirs func() [][16]byte
	// cordonedDirs, when set, lists the directory ids of the cordoned log
	// dirs (KIP-1066) and whether the metadata.version has them (4.3-IV0):
	// sent in heartbeats once the broker has caught up (RECOVERY), null
	// before and below that version.
	cordonedDirs func() ([][16]byte, bool)

	unfencedOnce sync.Once
	unfenced     chan struct{}
	// wake makes the heartbeat loop send its next heartbeat now.
	wake chan struct{}

	mu struct { // a leaf
		lockrank.Mutex
		epoch    int64
		fenced   bool
		shutdown bool // asked for controlled shutdown
		// reported are the offline dirs a heartbeat the controller
		// answered without error carried (BrokerLifecycleManager's
		// offlineDirs map, dir -> communicated).
		reported map[[16]byte]bool
		caughtUp bool // a heartbeat answered IsCaughtUp (Kafka's RECOVERY)
		// lastCordoned are the cordoned log dirs last applied.
		lastCordoned []string
	}
	stopped chan struct{}
}

func newLifecycle(ch *controllerChannel, reg *kmsg.BrokerRegistrationRequest, interval time.Duration, metadataOffset func() int64, logger *zap.Logger) *lifecycle {
	l := &lifecycle{
		channel:        ch,
		logger:         logger,
		interval:       interval,
		registration:   reg,
		metadataOffset: metadataOffset,
		unfenced:       make(chan struct{}),
		wake:           make(chan struct{}, 1),
		stopped:        make(chan struct{}),
	}
	l.mu.SetRank(lockrank.Lifecycle)
	l.mu.epoch = -1
	l.mu.fenced = true
	return l
}

// run registers and heartbeats until ctx is done or a controlled shutdown
// completes.
func (l *lifecycle) run(ctx context.Context) {
	defer close(l.stopped)
	for ctx.Err() == nil {
		if err := l.register(ctx); err != nil {
			if ctx.Err() == nil {
				l.logger.Warn("broker registration failed; retrying", zap.Error(err))
				l.wait(ctx, l.interval)
			}
			continue
		}
		if done := l.heartbeatLoop(ctx); done {
			return
		}
	}
}

func (l *lifecycle) register(ctx context.Context) error {
	req := *l.registration
	l.mu.Lock()
	if l.mu.epoch >= 0 {
		// Re-registering after losing the session: our last epoch. On the
		// first registration the template carries the epoch from the
		// clean-shutdown marker (KIP-966), or -1.
		req.PreviousBrokerEpoch = l.mu.epoch
	}
	l.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	kresp, err := l.channel.Request(rctx, &req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	l.mu.Lock()
	l.mu.epoch = resp.BrokerEpoch
	l.mu.Unlock()
	l.logger.Info("registered with the controller", zap.Int64("broker_epoch", resp.BrokerEpoch))
	return nil
}

// heartbeatLoop sends heartbeats every interval. It returns true when the
// controller granted a controlled shutdown, false when the broker must
// register again (its epoch is stale).
func (l *lifecycle) heartbeatLoop(ctx context.Context) bool {
	for {
		l.mu.Lock()
		fenced, epoch := l.mu.fenced, l.mu.epoch
		l.mu.Unlock()
		if fenced && l.waitMetadata != nil {
			wctx, cancel := context.WithTimeout(ctx, l.interval)
			_ = l.waitMetadata(wctx, epoch) // on timeout, heartbeat anyway
			cancel()
		}
		l.mu.Lock()
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID = l.registration.BrokerID
		req.BrokerEpoch = l.mu.epoch
		req.WantShutdown = l.mu.shutdown
		caughtUp := l.mu.caughtUp
		l.mu.Unlock()
		if l.cordonedDirs != nil && caughtUp {
			if ids, ok := l.cordonedDirs(); ok {
				req.CordonedLogDirs = append([][16]byte{}, ids...) // non-null: reported
			}
		}
		req.CurrentMetadataOffset = l.metadataOffset()
		if l.offlineDirs != nil {
			req.OfflineLogDirs = l.offlineDirs()
		}

		hctx, cancel := context.WithTimeout(ctx, l.interval*3)
		kresp, err := l.channel.Request(hctx, req)
		cancel()
		if err == nil {
			resp := kresp.(*kmsg.BrokerHeartbeatResponse)
			switch err := kerr.ErrorForCode(resp.ErrorCode); {
			case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
				l.logger.Warn("controller does not know this broker epoch; registering again", zap.Error(err))
				return false
			case err != nil:
				l.logger.Debug("heartbeat error", zap.Error(err))
			default:
				l.mu.Lock()
				l.mu.fenced = resp.IsFenced
				l.mu.caughtUp = l.mu.caughtUp || resp.IsCaughtUp
				for _, d := range req.OfflineLogDirs {
					if l.mu.reported == nil {
						l.mu.reported = make(map[[16]byte]bool)
					}
					l.mu.reported[d] = true
				}
				l.mu.Unlock()
				if !resp.IsFenced {
					l.unfencedOnce.Do(func() {
						l.logger.Info("broker unfenced by the controller", zap.Int64("metadata_offset", req.CurrentMetadataOffset))
						close(l.unfenced)
					})
				}
				if resp.ShouldShutdown {
					return true
				}
			}
		} else if ctx.Err() == nil {
			l.logger.Debug("heartbeat failed", zap.Error(err))
		}
		if !l.wait(ctx, l.interval) {
			return true
		}
	}
}

func (l *lifecycle) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-l.wake:
		return true
	}
}

// beginShutdown makes the next heartbeats ask for a controlled shutdown.
func (l *lifecycle) beginShutdown() {
	l.mu.Lock()
	l.mu.shutdown = true
	l.mu.Unlock()
	l.poke()
}

// dirFailed is BrokerLifecycleManager.propagateDirectoryFailure: the next
// heartbeat goes now (it carries the dir in OfflineLogDirs), and if no
// heartbeat carrying dir has been answered within timeout
// (log.dir.failure.timeout.ms, KIP-858), onTimeout runs: the broker must not
// keep leading partitions in a dir the controller does not know failed.
func (l *lifecycle) dirFailed(dir [16]byte, timeout time.Duration, onTimeout func()) {
	l.poke()
	time.AfterFunc(timeout, func() {
		l.mu.Lock()
		done := l.mu.reported[dir]
		l.mu.Unlock()
		if !done {
			onTimeout()
		}
	})
}

// poke sends the next heartbeat now.
func (l *lifecycle) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *lifecycle) epoch() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.epoch
}

// cordonedChanged sends the next heartbeat now when the cordoned log dirs
// changed (a dynamic cordoned.log.dirs), so that the controller knows
// before it places the next replicas.
func (l *lifecycle) cordonedChanged(dirs []string) {
	l.mu.Lock()
	changed := !slices.Equal(l.mu.lastCordoned, dirs)
	l.mu.lastCordoned = slices.Clone(dirs)
	l.mu.Unlock()
	if changed {
		l.poke()
	}
}
