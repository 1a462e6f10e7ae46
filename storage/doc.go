// Package storage is kgo-broker's partition log, in Apache Kafka's on-disk format, so
// that Kafka's own tools (kafka-dump-log.sh) read what it writes and it reads what a
// Kafka broker wrote.
//
// # Shape
//
//	Manager (LogManager)               one per broker: every <topic>-<partition> in log.dirs
//	  ├─ recovery-point-offset-checkpoint, log-start-offset-checkpoint, .kafka_cleanshutdown
//	  └─ Log (UnifiedLog + LocalLog)   one per partition, safe for concurrent use
//	       ├─ segments (LogSegment)    <base>.log + .index + .timeindex, last one active
//	       ├─ epochCache               leader-epoch-checkpoint (LeaderEpochFileCache)
//	       └─ producerState            <offset>.snapshot (ProducerStateManager)
//
// A produce goes AppendAsLeaderWith (AppendOptions: origin, KIP-890 guard;
// AppendAsLeader is the coordinator origin without verification):
// validate every batch (framing, magic 2, CRC-32C, counts, record structure,
// timestamps, keys of compacted topics, max.message.bytes), check idempotent producer
// sequences, rewrite baseOffset and partitionLeaderEpoch in place, maybe roll, write the
// bytes as they are, index them, and, with flush.messages reached, fsync before
// returning (one fsync serves every appender waiting: group commit). A fetch goes Read:
// the offset index gives a position at or below the offset, a scan of batch headers
// finds the batch holding it, and the result is a FileRegion of whole batches in one
// segment that FileRegion.WriteTo sends with sendfile(2).
//
// # Transactions
//
// The producer state (producer.go, ProducerStateManager / ProducerAppendInfo)
// follows each producer id: epoch, last five batches, coordinator epoch, the
// first offset of its open transaction. An append stages its changes and
// commits them once written:
//
//	data batch     epoch not older (INVALID_PRODUCER_EPOCH); from clients,
//	               sequences in order; a transactional batch opens the
//	               transaction (currentTxnFirstOffset), a plain one while it
//	               is open is INVALID_TXN_STATE
//	end marker     epoch not older, and with transaction.version 2 newer
//	               (AppendOptions.TransactionVersion, KIP-1228; the same epoch
//	               with nothing open is a retried marker); coordinator epoch not
//	               older (TRANSACTION_COORDINATOR_FENCED); closes the
//	               transaction: an ABORT is indexed in the segment's .txnindex
//	               with the last stable offset right after it (the oldest
//	               other open transaction's start, else the marker + 1)
//	follower/replay the leader's batches as they are: regressions accepted
//
// Open transactions and completed ones whose markers the high watermark has
// not passed (Log.UpdateHighWatermark, which replication calls on every high
// watermark store) hold the first unstable offset back; it is never below the
// log start offset. The last stable offset is min(it, high watermark).
//
// KIP-890 verification: before a transactional produce of a producer with
// nothing open here, the leader calls MaybeStartTransactionVerification,
// which records a verification entry (lowest sequence and epoch seen) and
// hands out its unique VerificationGuard; once the coordinator confirmed the
// partition, the append carries the guard (AppendOptions.Guard). With
// RequireVerification (transaction.partition.verification.enable) a
// transactional data batch that would open a transaction without the current
// guard is INVALID_TXN_STATE; any transactional write or marker clears the
// entry, so a verification answered before an abort marker cannot start a
// transaction after it. Entries are in memory only and expire with
// producer.id.expiration.ms; so do idle producers without an open
// transaction, checked every producer.id.expiration.check.interval.ms
// (Manager.Maintain). Recovery rebuilds everything from the newest snapshot
// at or below the recovery start and a batch-by-batch replay, the .txnindex of
// recovered segments included. The cleaner removes aborted data, then the
// markers whose transactions have no data left, delete.retention.ms after it
// gave them a delete horizon, and never cleans past the first unstable offset.
//
// Errors a Kafka client should see are franz-go kerr values (errors.Is); anything else
// is an I/O error and means the log dir is in trouble: a log the Manager opened then
// goes offline with its whole log dir (logdir.go, KIP-112) and answers
// kerr.KafkaStorageError. The Manager also runs the log cleaner threads that compact
// logs with cleanup.policy=compact (cleaner.go, clean.go).
//
// Lock order: Manager.maintainLock, then Manager.ckptMu or cleaner.ckptMu (checkpoint
// writes), then Manager.mu, then cleaner.mu, then Log.flushMu, then Log.commit (group
// commit), then Log.mu, then Log.durable (a leaf). Log.mu guards every field under it
// (segments, offsets, epoch cache, producer state); fsync runs holding only flushMu, so
// reads and appends proceed during it. Storage never calls up: the cleaner's bound is
// the log's own high watermark (Log.UpdateHighWatermark), and an I/O error reaches the
// Manager on its own goroutine. The vfs locks come after all of these. The ranks are
// docs/LOCKING.md's table (lockrank), checked under -race and -tags invariants.
//
// # Files
//
// Partition directory <topic>-<partition> (LocalLog.java, LogFileUtils.java); a deleted
// one is renamed <topic>-<partition>.<32 hex uuid>-delete, then removed.
//
// <base>.log: concatenated record batches, magic v2 (DefaultRecordBatch.java). All
// integers big-endian; the CRC is CRC-32C over Attributes..end, so BaseOffset and
// PartitionLeaderEpoch can be rewritten without recomputing it.
//
//	offset  size  field
//	     0     8  BaseOffset
//	     8     4  Length (bytes after this field)
//	    12     4  PartitionLeaderEpoch
//	    16     1  Magic = 2
//	    17     4  CRC (uint32, Castagnoli)
//	    21     2  Attributes: bits 0-2 codec (0 none 1 gzip 2 snappy 3 lz4 4 zstd),
//	              3 LogAppendTime, 4 transactional, 5 control, 6 delete horizon
//	    23     4  LastOffsetDelta
//	    27     8  BaseTimestamp
//	    35     8  MaxTimestamp
//	    43     8  ProducerId
//	    51     2  ProducerEpoch
//	    53     4  BaseSequence
//	    57     4  RecordsCount
//	    61     …  records, compressed as a whole when the codec is not none
//
// Record (DefaultRecord.java), zig-zag varints: length, attributes int8,
// timestampDelta varlong, offsetDelta varint, keyLen varint (-1 null) + key, valueLen
// varint + value, headerCount varint, then per header keyLen + key, valueLen + value.
// Snappy is read raw or in Java's xerial framing ("\x82SNAPPY\x00", version, compat,
// then [int32 length][block]...), and written in xerial framing; lz4 is the lz4 frame
// format (KafkaLZ4BlockOutputStream).
//
// <base>.index (OffsetIndex.java, AbstractIndex.java): 8-byte entries
//
//	int32 relativeOffset (offset - base)   int32 position in .log
//
// sparse: before appending a batch, if more than index.interval.bytes were written
// since the last entry, add (batch lastOffset, batch position) — the rule
// LogSegment.append and LogSegment.recover use. Preallocated to segment.index.bytes
// rounded down to 8 while the segment is active, trimmed to the entries on roll and
// close. A full index rolls the segment.
//
// <base>.timeindex (TimeIndex.java): 12-byte entries
//
//	int64 timestamp   int32 relativeOffset
//
// written with each offset index entry as (max timestamp so far, last offset of the
// batch holding it), only when the timestamp grows; a final entry is added on roll and
// close. Preallocated to segment.index.bytes rounded down to 12.
//
// Neither index has a checksum: after an unclean shutdown every segment from the
// recovery point on is rescanned (CRC of each batch, offsets increasing), its indexes
// rebuilt, and the log truncated at the first torn or corrupt batch (LogLoader,
// LogSegment.recover). A missing or insane index is rebuilt in any case.
//
// <base>.txnindex (TransactionIndex.java, AbortedTxn.java), created with its first
// entry: one 34-byte entry per transaction aborted by a marker in the segment
//
//	int16 version = 0   int64 producerId   int64 firstOffset
//	int64 lastOffset (the ABORT marker)   int64 lastStableOffset (right after it)
//
// Log.ReadCommitted reads it for read_committed fetches; Log.FirstUnstableOffset
// gives the first offset of the oldest unstable transaction (for the LSO).
//
// <offset>.snapshot (ProducerStateManager.java, ProducerSnapshot.json), written on
// roll (at the new base offset) and close (at the log end offset):
//
//	int16  version = 1
//	uint32 crc      CRC-32C of every byte after this field
//	int32  count
//	count × 46 bytes: int64 producerId, int16 epoch, int32 lastSequence,
//	       int64 lastOffset, int32 offsetDelta, int64 timestamp,
//	       int32 coordinatorEpoch, int64 currentTxnFirstOffset (-1 none)
//
// On open the newest snapshot at or below the log end offset is loaded and the batches
// after it replayed.
//
// leader-epoch-checkpoint (LeaderEpochCheckpointFile.java, CheckpointFile.java):
//
//	0                 version
//	2                 entry count
//	0 0               <epoch> <startOffset>
//	3 1200
//
// partition.metadata (PartitionMetadataFile.java), no trailing newline:
//
//	version: 0
//	topic_id: <Uuid, base64url without padding>
//
// Per log dir (LogManager.scala, OffsetCheckpointFile.java):
// recovery-point-offset-checkpoint and log-start-offset-checkpoint
//
//	0                 version
//	2                 entry count
//	orders 0 1500     <topic> <partition> <offset>
//	orders 1 1432
//
// cleaner-offset-checkpoint (LogCleanerManager.java), same format: each compacted
// log's first dirty offset. <base>.log.cleaned / .index.cleaned / .timeindex.cleaned /
// .txnindex.cleaned are a segment the log cleaner is writing, renamed to .swap and
// then to the final names when it is swapped in (clean.go: the crash-safe swap and
// its completion on open).
//
// .kafka_cleanshutdown (CleanShutdownFileHandler.java), written last by
// Manager.Close and removed at startup. Kafka serializes a HashMap<String,String>
// with Jackson, so the bytes are {"broker_epoch":"N","version":"0"} (string values,
// HashMap key order); its existence is what marks a clean shutdown.
//
// Every checkpoint is written to <name>.tmp, fsynced, renamed and the directory
// fsynced. All file I/O goes through storage/vfs, so tests run on an in-memory file
// system and inject failed writes, failed fsyncs, short writes and torn tails.
//
// # Crash model
//
// A kill -9 loses nothing written: the page cache survives it. A power loss (or a
// kernel crash) keeps only what was synced, and tests model it with
// vfs.MemFS.CrashClone: a file holds what its last fsync saw, a directory entry
// (create, rename, remove) exists as of the last fsync of its directory; with
// vfs.CrashKeepSome a seeded part of the rest survives too (unsynced directory
// changes as a prefix of the order they were made, file tails torn, the last block
// possibly zeros). What the storage relies on, and keeps true:
//
//   - Acknowledged means synced only with flush.messages (group commit, Log.syncTo:
//     the .log files past the durable point and, after a segment file was created
//     or renamed, the directory). Otherwise durability is replication's.
//   - A directory the storage creates (a log dir, a partition directory) has its
//     parent fsynced (vfs.MkdirAllSync; Kafka does it for log dirs and leaves
//     partition directories to the next checkpoint written in the log dir). A
//     new partition directory is filled first and then it and its parent are
//     fsynced once each, before OpenLog returns (vfs.MkdirAllCreated,
//     vfs.SyncCreated).
//   - leader-epoch-checkpoint describes every record: it is written before the
//     first record of an epoch is appended. An epoch led from the log end with
//     no record yet, and the truncation of epochs past the end on opening, are
//     written with the next append (epochCache.stale): losing them in a crash
//     is the same as never having led that epoch, or truncating again.
//   - Checkpoints and producer snapshots are published by rename after an fsync,
//     and the directory fsynced (vfs.WriteFileAtomic, Utils.atomicMoveWithFallback).
//   - A truncation is fsynced (the truncated segment, and the directory when
//     segments were renamed away) before it returns, so records acknowledged after
//     it can never have truncated ones come back in front of them. Kafka leaves
//     this to the file system's journal.
//   - The cleaner's swap has one commit point (the .log.swap name, after every
//     cleaned file and the directory were fsynced); opening a log finishes or
//     undoes a swap cut anywhere (clean.go).
//   - Renames of deleted segments to .deleted are not fsynced (nor in Kafka): after
//     a crash a segment may come back; the log start offset checkpoint and recovery
//     delete it again, and until then its records are readable again above a
//     stale log start offset, as in Kafka.
//   - Recovery rescans from the recovery point (every segment after an unclean
//     shutdown), truncates at the first torn or corrupt batch, and makes the leader
//     epoch cache agree with the batches it rescans (epochCache.recovered): the
//     checkpoint is fsynced with an epoch's first record, before the record is, so
//     it may name an epoch for offsets that hold older records after the crash.
//     Entries starting at or past the recovered log end offset are dropped
//     (LogLoader); an epoch the cache dropped from its start (DeleteRecords,
//     retention) stays unknown below its first entry if the records come back.
//
// crash_test.go checks all of it: a workload of appends, rolls, leader epochs,
// truncations, DeleteRecords, retention, checkpoints and partition deletions takes
// a crash image before every file operation, strict and keeping some, and each
// image must open, read, keep every acknowledged record and producer sequence,
// bring back no deleted partition, and have leader epochs that match its batches.
package storage
