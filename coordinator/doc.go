// Package coordinator is the coordinator runtime shared by the group
// coordinator (package group, on __consumer_offsets) and the transaction
// coordinator (package txn, on __transaction_state), in the spirit of
// Kafka's CoordinatorRuntime (coordinator-common): a coordinator's state
// is kept in the partitions of its topic, one shard per partition this
// node leads, and each shard is changed by one event loop only.
//
//	SetLeaders (metadata image) ──► loop per led partition: load ─► active ─► unloaded
//	                                  │ queue: Run / Post ops, timer firings, unload
//	request ──Run(partition, op)──────┤
//	                                  │ op(shard): reads and changes state,
//	                                  │   ctx.Append(batch) ──► Writer (local append, acks=1)
//	                                  │ response deferred until the high
//	                                  ▼ watermark passes everything written
//	                        Writer.Watch wakes the loop on high watermark moves
//
// # Operations
//
// Run queues op on the partition's loop and returns once op ran and every
// record the partition holds up to that point is committed: op's own
// writes, and the writes of earlier operations whose state op may have
// read. No lock is held while a write replicates: the loop appends locally
// and goes on with the next event, and the caller waits on a channel. So a
// response never reports state a leader change could still take back
// (Kafka completes write operations when the high watermark passes their
// records, and reads a snapshot at the committed offset for read
// operations; waiting for the commit gives reads the same guarantee without
// snapshots).
//
// Write-then-apply: an operation builds its records from the current state,
// appends them, and changes the state only once Append returned nil. A
// failed append therefore leaves nothing to revert (Kafka reverts its
// timeline data structures to the last written offset). Records appended
// but not yet committed when this node loses the partition are dropped
// with the whole shard on unload; the next leader loads from its own log,
// which is what a truncation leaves behind.
//
// # Loading and unloading
//
// SetLeaders is called with the partitions this node leads and their leader
// epochs after every metadata image. A newly led partition (or one led at a
// new epoch) gets a loop that replays the partition's log into a fresh shard
// (Shard.Replay, control markers included), calls Shard.Loaded and then
// serves; meanwhile Run answers COORDINATOR_LOAD_IN_PROGRESS. A partition no
// longer led is unloaded: its timers stop, Shard.Unloaded runs, and every
// operation queued or waiting for a commit answers NOT_COORDINATOR, as do
// later calls. A failed load is retried on the next SetLeaders. Appends
// carry the loaded leader epoch, so a loop that outlived its leadership
// cannot write.
//
// # Timers and deferred work
//
// Context.Schedule runs a function on the loop after a delay read from the
// injected Clock (ManualClock in tests fires due timers on Advance), keyed
// so that scheduling again replaces the timer. Context.Defer runs a
// function on the loop once everything written so far is committed: parked
// requests (JoinGroup, SyncGroup) are answered and follow-up work (sending
// transaction markers after PrepareCommit) starts this way.
//
// # Locks
//
// Runtime.mu (the loop map) is taken before a loop's mu (its queue and
// state, a leaf): SetLeaders unloads, and Partitions reads, loops under it.
// Neither is held while an event runs or while calling out. ManualClock.mu
// and MemLog.mu are leaves too: timers fire after the clock's lock is
// released, and a watcher's wake is a non-blocking send. Shards have no
// locks; everything they own is touched from their loop only. Writer.Watch's
// wake is a non-blocking send, safe under the writer's locks. The ranks
// (lockrank.CoordinatorRuntime, CoordinatorLoop, ManualClock, MemLog) are in
// docs/LOCKING.md.
package coordinator
