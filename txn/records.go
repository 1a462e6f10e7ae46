package txn

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The records of __transaction_state (Kafka's TransactionLog; the schemas
// are TransactionLogKey.json and TransactionLogValue.json of the
// transaction-coordinator module):
//
//	key:   int16 0 (CoordinatorRecordType TRANSACTION_LOG)
//	       string transactional_id                       (non-flexible)
//	value: int16 version (0, or 1 from transaction.version 1)
//	       int64 producer_id
//	       int16 producer_epoch
//	       int32 transaction_timeout_ms
//	       int8  transaction_status (State)
//	       [topic, [partition]] transaction_partitions   (null when Empty)
//	       int64 transaction_last_update_timestamp_ms
//	       int64 transaction_start_timestamp_ms
//	       v1 tagged: 0 previous_producer_id, 1 next_producer_id,
//	                  2 client_transaction_version, 3 next_producer_epoch
//	tombstone: the key with a null value (an expired transactional id)
//
// kmsg.TxnMetadataKey and kmsg.TxnMetadataValue encode exactly these
// bytes, which is what kafka-dump-log.sh --transaction-log-decoder reads.
// Kafka 4.4 never writes next_producer_epoch (KIP-939 is not finished); a
// tagged field at its default is left out, as Kafka's generated code does.

// keyVersion is the only TransactionLogKey version.
const keyVersion int16 = 0

var (
	errUnknownKeyVersion   = errors.New("unknown transaction log key version")
	errUnknownValueVersion = errors.New("unknown transaction log value version")
)

// encodeKey is TransactionLog.keyToBytes.
func encodeKey(txnID string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = keyVersion
	k.TransactionalID = txnID
	return k.AppendTo(nil)
}

// encodeValue is TransactionLog.valueToBytes: the value version follows the
// cluster's transaction.version (tv), not the client's.
func encodeValue(t transit, tv int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = logValueVersion(tv)
	v.ProducerID = t.producerID
	v.ProducerEpoch = t.producerEpoch
	v.TimeoutMillis = t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp = t.lastUpdateMs
	v.StartTimestamp = t.startMs
	v.ClientTransactionVersion = t.clientTV
	if v.Version >= 1 {
		v.PreviousProducerID = t.prevProducerID
		v.NextProducerID = t.nextProducerID
	}
	if t.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range t.partitions.sorted() {
			if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
				v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			vt := kmsg.NewTxnMetadataValueTopic()
			vt.Topic = tp.Topic
			vt.Partitions = []int32{tp.Partition}
			v.Topics = append(v.Topics, vt)
		}
	}
	return v.AppendTo(nil)
}

// decoded is one record read back: a transactional id and its metadata, or
// a tombstone (meta nil).
type decoded struct {
	txnID string
	meta  *metadata
}

// decodeRecord is TransactionLog.read. Unknown key or value versions are
// errUnknownKeyVersion / errUnknownValueVersion, which loading skips as
// Kafka does (leftovers of an aborted upgrade); other errors are corrupt
// records.
func decodeRecord(key, value []byte) (decoded, error) {
	if len(key) < 2 {
		return decoded{}, errors.New("transaction log key too short")
	}
	if v := int16(key[0])<<8 | int16(key[1]); v != keyVersion {
		return decoded{}, fmt.Errorf("%w %d", errUnknownKeyVersion, v)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return decoded{}, fmt.Errorf("decoding transaction log key: %w", err)
	}
	if value == nil {
		return decoded{txnID: k.TransactionalID}, nil
	}
	if len(value) < 2 {
		return decoded{}, errors.New("transaction log value too short")
	}
	if v := int16(value[0])<<8 | int16(value[1]); v < 0 || v > 1 {
		return decoded{}, fmt.Errorf("%w %d", errUnknownValueVersion, v)
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return decoded{}, fmt.Errorf("decoding transaction log value of %q: %w", k.TransactionalID, err)
	}
	state := State(v.State)
	if !state.valid() {
		// Kafka's TransactionState.fromId throws here.
		return decoded{}, fmt.Errorf("transaction log value of %q: unknown transaction state id %d", k.TransactionalID, v.State)
	}
	m := &metadata{
		txnID: k.TransactionalID, producerID: v.ProducerID, prevProducerID: v.PreviousProducerID,
		nextProducerID: v.NextProducerID, producerEpoch: v.ProducerEpoch, lastProducerEpoch: noProducerEpoch,
		timeoutMs: v.TimeoutMillis, state: state, partitions: tpSet{}, startMs: v.StartTimestamp,
		lastUpdateMs: v.LastUpdateTimestamp, clientTV: v.ClientTransactionVersion, pending: noState,
	}
	if state != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return decoded{txnID: k.TransactionalID, meta: m}, nil
}

// partitionsOf lists a set sorted, for responses.
func partitionsOf(s tpSet) []TopicPartition { return s.sorted() }
