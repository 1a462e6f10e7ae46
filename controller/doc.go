// Package controller is the active KRaft controller: it validates admin and
// broker-lifecycle requests, decides replica placement, leader elections and
// broker fencing, and turns every decision into metadata records appended
// through raft.
//
// Served (Handle): CreateTopics v2-7, DeleteTopics v1-6, CreatePartitions
// v0-3, IncrementalAlterConfigs v0-1, AlterConfigs v0-2 (TOPIC and BROKER
// resources), BrokerRegistration v0-4, BrokerHeartbeat v0-1,
// UnregisterBroker v0, AllocateProducerIds v0, AlterPartition v2-3,
// ListPartitionReassignments v0 (always empty) and DescribeQuorum (handed to
// raft). Each file names the Kafka class whose decisions it follows.
//
// Placement is Kafka's striped placer (placer.go); a new partition's leader
// is its first active replica and its ISR its active replicas. Elections
// (partitions.go) keep a valid leader, else take the first replica in the
// ISR that is active; with unclean.leader.election.enable any active
// replica. ELR (KIP-966) is not enabled, so an ISR never shrinks to empty.
//
// # Decision -> records -> raft -> commit -> replay
//
//	Handle(req)                     background loop (run)
//	   |                                |  leader change -> activate
//	   |  c.mu (one decision at a time) |  every metadata.max.idle.interval.ms -> NoOpRecord
//	   v                                |  expired sessions -> fence (one broker per batch)
//	read state (stateMu) --------------+
//	   |  validate, place replicas, elect leaders
//	   v
//	[]metadatacache.Record --EncodeRecord--> raft.Append (one atomic batch, returns after commit)
//	                                              |
//	               raft listener: HandleCommit(batch) (stateMu)
//	                 - state.replay: the controller's own view (topics, brokers,
//	                   configs, features, producer ids, registration offsets)
//	                 - metadatacache.Cache.Apply: the Image (Image())
//	                 - wake waiters
//	   <-------------------------------------------+
//	answer the request (only after the batch was replayed)
//
// A decision never changes state directly: the state changes only when the
// committed batch is replayed, exactly as on every other node. validate_only
// requests stop before the append. A decision that produced no records
// appends nothing.
//
// # Activation
//
// Raft delivers a leader change only after every batch committed before the
// new epoch (KRaft's listener contract), so when this node becomes leader the
// replayed state is complete. On an empty log the controller writes Kafka's
// bootstrap records in a metadata transaction: BeginTransactionRecord,
// FeatureLevelRecord metadata.version (4.0-IV3, level 25 by default), the
// other bootstrap features (group.version 1, transaction.version 2), then
// EndTransactionRecord. On a non-empty log it aborts an unfinished metadata
// transaction, or writes one NoOpRecord; either way the append tells it the
// offset the next batch starts at, which is the broker epoch a new
// registration gets (Kafka uses the RegisterBrokerRecord's offset). Until
// activation is done, and whenever raft names another leader, every request
// is answered NOT_CONTROLLER.
//
// # Locks
//
// Lock order: c.mu, then c.stateMu. c.mu serializes decisions and is held
// across the raft append and the wait for its replay; it guards activation,
// the next write offset, the placer's random source and the brokers'
// heartbeat sessions. c.stateMu guards the replayed state and the current
// raft leader; the raft listener takes only c.stateMu, so a decision
// waiting for its own batch never blocks replay. The controller's image
// (its own metadatacache.Cache, with no subscribers) is applied from the
// listener holding c.stateMu, so the cache's locks come after both
// (lockrank.ControllerDecide -> ControllerState -> CacheDeliver -> Cache;
// raft.Node.mu, taken by the append under c.mu, after those).
package controller
