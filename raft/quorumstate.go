package raft

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// QuorumStateFile is the name of the quorum-state file in the partition dir.
const QuorumStateFile = "quorum-state"

// quorum-state layout (FileQuorumStateStore.java, QuorumStateData.json), one
// line of JSON; the data_version follows the kraft.version when it is
// written (KRaftVersion.quorumStateVersion): 0 for static voters,
//
//	{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,
//	 "currentVoters":[{"voterId":1}],"data_version":0}
//
// and 1 from kraft.version 1, with the voted replica's directory id and no
// voters (the voter set is in the log):
//
//	{"leaderId":1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}
type quorumStateJSON struct {
	ClusterID     string      `json:"clusterId"`
	LeaderID      int32       `json:"leaderId"`
	LeaderEpoch   int32       `json:"leaderEpoch"`
	VotedID       int32       `json:"votedId"`
	AppliedOffset int64       `json:"appliedOffset"`
	CurrentVoters []voterJSON `json:"currentVoters"`
	DataVersion   int16       `json:"data_version"`
}

type voterJSON struct {
	VoterID int32 `json:"voterId"`
}

// quorumStateV1JSON is data_version 1, fields in QuorumStateDataJsonConverter's order.
type quorumStateV1JSON struct {
	LeaderID         int32  `json:"leaderId"`
	LeaderEpoch      int32  `json:"leaderEpoch"`
	VotedID          int32  `json:"votedId"`
	VotedDirectoryID string `json:"votedDirectoryId"`
	DataVersion      int16  `json:"data_version"`
}

type quorumStateReadJSON struct {
	LeaderID         *int32  `json:"leaderId"`
	LeaderEpoch      *int32  `json:"leaderEpoch"`
	VotedID          *int32  `json:"votedId"`
	VotedDirectoryID *string `json:"votedDirectoryId"`
	DataVersion      *int16  `json:"data_version"`
}

// EncodeQuorumState renders the quorum-state file contents (no trailing newline,
// as Kafka's ObjectMapper writes it): data_version 1 when hs.KRaftVersion is
// 1 or more, else 0 with the static voters.
func EncodeQuorumState(hs HardState, voters []int32) []byte {
	if hs.KRaftVersion >= 1 {
		b, _ := json.Marshal(quorumStateV1JSON{LeaderID: hs.LeaderID, LeaderEpoch: hs.LeaderEpoch, VotedID: hs.VotedID,
			VotedDirectoryID: uuidString(hs.VotedDirectoryID), DataVersion: 1})
		return b
	}
	v := slices.Clone(voters)
	slices.Sort(v)
	q := quorumStateJSON{LeaderID: hs.LeaderID, LeaderEpoch: hs.LeaderEpoch, VotedID: hs.VotedID,
		CurrentVoters: make([]voterJSON, 0, len(v))}
	for _, id := range v {
		q.CurrentVoters = append(q.CurrentVoters, voterJSON{VoterID: id})
	}
	b, _ := json.Marshal(q)
	return b
}

// DecodeQuorumState parses a quorum-state file (data_version 0 or 1).
func DecodeQuorumState(b []byte) (HardState, error) {
	var q quorumStateReadJSON
	if err := json.Unmarshal(b, &q); err != nil {
		return HardState{}, fmt.Errorf("raft: quorum-state: %w", err)
	}
	if q.DataVersion == nil || *q.DataVersion < 0 || *q.DataVersion > 1 {
		return HardState{}, errors.New("raft: quorum-state: missing or unknown data_version")
	}
	hs := HardState{LeaderID: NoLeader, VotedID: NoLeader}
	if q.LeaderEpoch != nil {
		hs.LeaderEpoch = *q.LeaderEpoch
	}
	if q.LeaderID != nil {
		hs.LeaderID = *q.LeaderID
	}
	if q.VotedID != nil {
		hs.VotedID = *q.VotedID
	}
	if *q.DataVersion >= 1 {
		hs.KRaftVersion = 1
		if q.VotedDirectoryID != nil {
			dir, err := ParseDirectoryID(*q.VotedDirectoryID)
			if err != nil {
				return HardState{}, fmt.Errorf("raft: quorum-state: %w", err)
			}
			hs.VotedDirectoryID = dir
		}
	}
	return hs, nil
}

// quorumStateStore reads and writes <partition dir>/quorum-state.
type quorumStateStore struct {
	fs     vfs.FS
	path   string
	voters []int32
}

func (s *quorumStateStore) read() (HardState, bool, error) {
	b, err := vfs.ReadFile(s.fs, s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return HardState{LeaderID: NoLeader, VotedID: NoLeader}, false, nil
	}
	if err != nil {
		return HardState{}, false, err
	}
	hs, err := DecodeQuorumState(b)
	return hs, err == nil, err
}

// write persists hs: .tmp, fsync, rename, fsync dir.
func (s *quorumStateStore) write(hs HardState) error {
	return vfs.WriteFileAtomic(s.fs, s.path, EncodeQuorumState(hs, s.voters))
}

func partitionDir(metadataLogDir string) string {
	return filepath.Join(metadataLogDir, "__cluster_metadata-0")
}
