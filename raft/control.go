package raft

// Control record key types (ControlRecordType.java). kmsg's ControlRecordKeyType
// misnames 2, so the package uses its own constants.
const (
	ControlAbort          int16 = 0
	ControlCommit         int16 = 1
	ControlLeaderChange   int16 = 2
	ControlSnapshotHeader int16 = 3
	ControlSnapshotFooter int16 = 4
	ControlKRaftVersion   int16 = 5
	ControlKRaftVoters    int16 = 6
)
