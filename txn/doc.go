// Package txn is the transaction coordinator (Kafka's TransactionCoordinator,
// TransactionStateManager and TransactionMarkerChannelManager) on the
// coordinator runtime.
package txn
