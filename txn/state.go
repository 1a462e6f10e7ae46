package txn

// State is a transaction's state (Kafka's TransactionState). The values are
// the ids Kafka writes in TransactionLogValue.TransactionStatus, and the
// names are those DescribeTransactions and ListTransactions report.
type State int8

const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7

	// noState marks "no pending state" in metadata.pending.
	noState State = -1
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// valid reports whether s is one of Kafka's states (an id read from the log
// may be anything).
func (s State) valid() bool { return s >= 0 && int(s) < len(stateNames) }

// StateFromName is Kafka's TransactionState.fromName (case-sensitive, as
// ListTransactions' StateFilters are).
func StateFromName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return noState, false
}

// expirationAllowed: only transactional ids with no open transaction may
// expire (TransactionState.isExpirationAllowed).
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// validPrevious reports whether a transaction may move from 'from' to s
// (TransactionState.validPreviousStates, Kafka 4.4). Transaction version 2
// lets Empty and the Complete states move to PrepareAbort: a client that is
// unsure of the server's state may always abort (KIP-890 part 2).
func (s State) validPrevious(from State) bool {
	switch s {
	case Empty:
		return from == Empty || from == CompleteCommit || from == CompleteAbort
	case Ongoing:
		return from == Ongoing || from == Empty || from == CompleteCommit || from == CompleteAbort
	case PrepareCommit:
		return from == Ongoing
	case PrepareAbort:
		return from == Ongoing || from == PrepareEpochFence || from == Empty || from == CompleteCommit || from == CompleteAbort
	case CompleteCommit:
		return from == PrepareCommit
	case CompleteAbort:
		return from == PrepareAbort
	case Dead:
		return from == Empty || from == CompleteAbort || from == CompleteCommit
	case PrepareEpochFence:
		return from == Ongoing
	}
	return false
}
