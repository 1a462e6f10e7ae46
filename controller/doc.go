// Package controller is the active KRaft controller: it validates admin and
// broker-lifecycle requests, decides replica placement, leader elections and
// broker fencing, and turns every decision into metadata records appended
// through raft.
//
// Served (Handle): CreateTopics v2-7, DeleteTopics v1-6, CreatePartitions
// v0-3, IncrementalAlterConfigs v0-1, AlterConfigs v0-2 (TOPIC and BROKER
// resources), BrokerRegistration v0-4, BrokerHeartbeat v0-2,
// UnregisterBroker v0, AllocateProducerIds v0, AlterPartition v2-3,
// AlterPartitionReassignments v0-1 and ListPartitionReassignments v0
// (reassign.go, KIP-455), UpdateFeatures v0-2
// (updatefeatures.go), ControllerRegistration v0 (controllers.go, KIP-919),
// AlterUserScramCredentials v0 (scram.go), AlterClientQuotas v0-1
// (quotas.go, ClientQuotaControlManager), ElectLeaders v0-2
// (electleaders.go) and DescribeQuorum (handed to raft). CreateTopics, CreatePartitions and DeleteTopics apply the
// controller mutation quota the caller passes with WithMutationQuota
// (KIP-599; THROTTLING_QUOTA_EXCEEDED per topic). Each file names the Kafka class whose
// decisions it follows. Requests a broker forwards in an Envelope arrive
// here unwrapped (the broker package serves Envelope on the CONTROLLER
// listener) and are decided as if the client had sent them; the broker
// package authorizes them (as the forwarded principal) before they reach
// the controller. CreateAcls and DeleteAcls (acls.go) are AclControlManager's.
//
// # Controller registrations
//
// Every controller registers with the active one (ControllerRegistration;
// the broker package's registration manager sends it) once metadata.version
// is 3.7-IV0 or later; the active controller writes a
// RegisterControllerRecord v0 and the registration is replayed into the
// state (controllers) and the image (Image.Controllers). UpdateFeatures
// checks each registered controller's supported ranges and refuses a change
// while a voter (Config.QuorumNodeIDs) has not registered, as Kafka's
// FeatureControlManager does.
//
// # Features
//
// features.go holds Kafka 4.4's production features (metadata.version
// 3.3-IV3..4.4-IV2, kraft.version, transaction.version, group.version,
// eligible.leader.replicas.version, share.version, streams.version), the
// levels kgo-broker implements (SupportedFeatures: what every node
// advertises and UpdateFeatures checks against) and the rules the format
// command and UpdateFeatures share: default levels per metadata.version,
// dependencies, safe downgrades. share.version stops at 1 (share groups
// without the dead-letter queue of level 2); streams.version 1 (KIP-1071
// streams groups) is the default from 4.2-IV1; eligible.leader.replicas.version 1 (KIP-966) is the default from 4.1-IV0. Every record is
// written at the version the finalized metadata.version implies
// (metadatacache.RecordVersionFor; below 3.6-IV0 an ISR shrink also bumps the
// leader epoch).
//
// Placement is Kafka's striped placer (placer.go); a new partition's leader
// is its first active replica and its ISR its active replicas. Every
// partition change goes through changeBuilder (partitions.go), Kafka's
// PartitionChangeBuilder: an ONLINE election keeps a valid leader, else
// takes the first active replica in the ISR; PREFERRED (ElectLeaders, the
// periodic balancing) first tries the first replica; UNCLEAN
// (unclean.leader.election.enable, ElectLeaders) falls back to any active
// replica, making it the ISR alone, RECOVERING. Before electing, any change
// completes a partition reassignment in progress once every target replica
// is in the ISR (reassign.go: KIP-455, AlterPartitionReassignments and
// ListPartitionReassignments); a change that drops a replica from the
// replica set bumps the leader epoch.
//
// # Eligible leader replicas (KIP-966)
//
// With eligible.leader.replicas.version 1 an ISR may shrink below the
// topic's effective min.insync.replicas (at most its replication factor),
// even to empty; the members it loses while below it are the ELR, which
// keep what the ISR acknowledged. With the ISR empty an active ELR member
// is elected (the ISR becomes it); with ISR and ELR empty the last known
// leader (LastKnownElr, set when the partition loses its leader), as an
// unclean election. An ISR back at min ISR empties the ELR. A broker
// registering a new incarnation without proof of a clean shutdown
// (PreviousBrokerEpoch equal to its registered epoch) leaves every ELR
// (brokerShutdownRecords). Changing a topic's or the cluster-level
// min.insync.replicas clears those ELRs (ClearElrRecord); broker-level
// min.insync.replicas cannot be set, nor the cluster-level one removed,
// while ELR is on, and enabling it writes the cluster-level one first
// (configs.go, updatefeatures.go). Disabling it (a safe downgrade) only
// lowers the level: each partition's lists are cleared at its next change,
// as in Kafka.
//
// # Periodic elections
//
// periodic_elections.go: with auto.leader.rebalance.enable, every
// leader.imbalance.check.interval.seconds, a PREFERRED election for every
// partition not led by its first replica; every
// unclean.leader.election.interval.ms an UNCLEAN one for every leaderless
// partition of a topic with unclean.leader.election.enable.
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
// FeatureLevelRecord metadata.version, the other bootstrap features, the
// cluster-level min.insync.replicas when ELR is on, then
// EndTransactionRecord. The
// features come from the zero checkpoint the format wrote
// (__cluster_metadata-0/00000000000000000000-0000000000.checkpoint, or the
// older bootstrap.checkpoint; bootstrap.go), read when the controller is
// created; without one they are 4.4-IV2, eligible.leader.replicas.version
// 1, group.version 1 and transaction.version 2. A bootstrap that finalizes a level kgo-broker does
// not support (Kafka 4.4's default format does) stops the start. Raft hands
// the zero checkpoint to the listener as a snapshot; it is not state and is
// skipped. On a non-empty log it aborts an unfinished metadata
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
