package raft

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Voter sets (KIP-853; VoterSet.java, ReplicaKey.java, Endpoints.java).
//
// A replica is named by a ReplicaKey: its node id and the directory.id of
// its metadata log dir (meta.properties). A static voter
// (controller.quorum.voters, kraft.version 0) has no directory id: any
// replica with its node id is that voter. A dynamic voter (kraft.version 1)
// has one, so a controller whose disk was replaced (same id, new directory)
// is not the voter until it is added again.
//
// The voter set of the partition is the one of the latest VotersRecord in the
// log, committed or not (KRaftControlRecordStateMachine.lastVoterSet), else
// the one of the latest snapshot (its VotersRecord sits in the snapshot's
// first control batch, see snapshot.go), else the static voter set of the
// configuration. The leader changes it one voter at a time (AddRaftVoter,
// RemoveRaftVoter), so any two consecutive voter sets have overlapping
// majorities and a voter set takes effect as soon as it is appended.

// ReplicaKey is a replica's node id and metadata log directory id; a zero
// DirectoryID is "no directory id" (ReplicaKey.NO_DIRECTORY_ID).
type ReplicaKey struct {
	ID          int32
	DirectoryID [16]byte
}

func (k ReplicaKey) hasDir() bool { return k.DirectoryID != [16]byte{} }

func (k ReplicaKey) String() string {
	if !k.hasDir() {
		return fmt.Sprintf("ReplicaKey(id=%d, directoryId=<undefined>)", k.ID)
	}
	return fmt.Sprintf("ReplicaKey(id=%d, directoryId=%s)", k.ID, uuidString(k.DirectoryID))
}

// uuidString renders a Kafka Uuid (URL-safe base64 without padding).
func uuidString(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// Endpoint is one named listener address of a voter (VotersRecord Endpoint).
type Endpoint struct {
	Name string
	Host string
	Port uint16
}

// Addr is host:port.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))) }

func (e Endpoint) String() string { return e.Name + "://" + e.Addr() }

// Voter is one member of a voter set (VoterSet.VoterNode).
type Voter struct {
	Key       ReplicaKey
	Endpoints []Endpoint
	// KRaftMin, KRaftMax: the kraft.version range the voter supports.
	KRaftMin, KRaftMax int16
}

// Endpoint returns the voter's endpoint on the named listener.
func (v Voter) Endpoint(listener string) (Endpoint, bool) {
	for _, e := range v.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	return Endpoint{}, false
}

// isVoter is VoterNode.isVoter: same id, and the same directory id unless
// this voter has none (a static voter).
func (v Voter) isVoter(k ReplicaKey) bool {
	if v.Key.ID != k.ID {
		return false
	}
	return !v.Key.hasDir() || v.Key.DirectoryID == k.DirectoryID
}

func (v Voter) equal(o Voter) bool {
	return v.Key == o.Key && v.KRaftMin == o.KRaftMin && v.KRaftMax == o.KRaftMax && slices.Equal(v.Endpoints, o.Endpoints)
}

func (v Voter) clone() Voter {
	v.Endpoints = slices.Clone(v.Endpoints)
	return v
}

// VoterSet is an immutable set of voters, sorted by id. The zero value is
// the empty set.
type VoterSet struct{ voters []Voter }

// NewVoterSet builds a voter set; ids must be unique.
func NewVoterSet(voters ...Voter) (VoterSet, error) {
	vs := VoterSet{}
	for _, v := range voters {
		if _, ok := vs.Get(v.Key.ID); ok {
			return VoterSet{}, fmt.Errorf("raft: voter %d listed twice", v.Key.ID)
		}
		vs.voters = append(vs.voters, v.clone())
	}
	slices.SortFunc(vs.voters, func(a, b Voter) int { return int(a.Key.ID) - int(b.Key.ID) })
	return vs, nil
}

// StaticVoterSet is the voter set of controller.quorum.voters
// (VoterSet.fromInetSocketAddresses): no directory ids, one endpoint each on
// the default controller listener, kraft.version 0 only.
func StaticVoterSet(listener string, voters map[int32]VoterEndpoint) VoterSet {
	vs := VoterSet{}
	for id, ep := range voters {
		vs.voters = append(vs.voters, Voter{Key: ReplicaKey{ID: id},
			Endpoints: []Endpoint{{Name: listener, Host: ep.Host, Port: uint16(ep.Port)}}})
	}
	slices.SortFunc(vs.voters, func(a, b Voter) int { return int(a.Key.ID) - int(b.Key.ID) })
	return vs
}

// Len is the number of voters.
func (s VoterSet) Len() int { return len(s.voters) }

// Voters returns the voters, sorted by id.
func (s VoterSet) Voters() []Voter {
	out := make([]Voter, len(s.voters))
	for i, v := range s.voters {
		out[i] = v.clone()
	}
	return out
}

// IDs returns the voter ids, ascending.
func (s VoterSet) IDs() []int32 {
	out := make([]int32, len(s.voters))
	for i, v := range s.voters {
		out[i] = v.Key.ID
	}
	return out
}

// Get returns the voter with this id.
func (s VoterSet) Get(id int32) (Voter, bool) {
	i, ok := slices.BinarySearchFunc(s.voters, id, func(v Voter, id int32) int { return int(v.Key.ID) - int(id) })
	if !ok {
		return Voter{}, false
	}
	return s.voters[i], true
}

// HasID reports whether a voter has this id.
func (s VoterSet) HasID(id int32) bool { _, ok := s.Get(id); return ok }

// IsVoter is VoterSet.isVoter.
func (s VoterSet) IsVoter(k ReplicaKey) bool {
	v, ok := s.Get(k.ID)
	return ok && v.isVoter(k)
}

// IsOnlyVoter reports whether k is the sole voter.
func (s VoterSet) IsOnlyVoter(k ReplicaKey) bool { return len(s.voters) == 1 && s.IsVoter(k) }

// Equal reports whether both sets hold the same voters.
func (s VoterSet) Equal(o VoterSet) bool {
	return slices.EqualFunc(s.voters, o.voters, func(a, b Voter) bool { return a.equal(b) })
}

// Add is VoterSet.addVoter: false when a voter with the id exists.
func (s VoterSet) Add(v Voter) (VoterSet, bool) {
	if s.HasID(v.Key.ID) {
		return s, false
	}
	out, _ := NewVoterSet(append(s.Voters(), v)...)
	return out, true
}

// Remove is VoterSet.removeVoter: the voter must match the key exactly and
// must not be the last one.
func (s VoterSet) Remove(k ReplicaKey) (VoterSet, bool) {
	v, ok := s.Get(k.ID)
	if !ok || v.Key != k || len(s.voters) <= 1 {
		return s, false
	}
	out := VoterSet{}
	for _, o := range s.voters {
		if o.Key.ID != k.ID {
			out.voters = append(out.voters, o.clone())
		}
	}
	return out, true
}

// Update is VoterSet.updateVoter: replaces the voter matching v's key.
func (s VoterSet) Update(v Voter) (VoterSet, bool) {
	old, ok := s.Get(v.Key.ID)
	if !ok || !old.isVoter(v.Key) {
		return s, false
	}
	return s.replace(v), true
}

// UpdateIgnoringDirectoryID is VoterSet.updateVoterIgnoringDirectoryId:
// replaces the voter with v's id whatever its directory id (kraft.version
// 0: the static voters learn their directory ids this way).
func (s VoterSet) UpdateIgnoringDirectoryID(v Voter) (VoterSet, bool) {
	if !s.HasID(v.Key.ID) {
		return s, false
	}
	return s.replace(v), true
}

func (s VoterSet) replace(v Voter) VoterSet {
	out := VoterSet{voters: make([]Voter, len(s.voters))}
	for i, o := range s.voters {
		if o.Key.ID == v.Key.ID {
			o = v
		}
		out.voters[i] = o.clone()
	}
	return out
}

// NeedsUpdate is VoterSet.voterNodeNeedsUpdate: v is a voter of the set
// whose entry differs (endpoints or supported versions).
func (s VoterSet) NeedsUpdate(v Voter) bool {
	old, ok := s.Get(v.Key.ID)
	return ok && old.isVoter(v.Key) && !old.equal(v)
}

// HasOverlappingMajority is VoterSet.hasOverlappingMajority: the sets differ
// by at most one voter in each direction.
func (s VoterSet) HasOverlappingMajority(o VoterSet) bool {
	diff := func(a, b VoterSet) int {
		n := 0
		for _, v := range a.voters {
			if w, ok := b.Get(v.Key.ID); !ok || w.Key != v.Key {
				n++
			}
		}
		return n
	}
	return diff(s, o) <= 1 && diff(o, s) <= 1
}

// SupportsVersion is VoterSet.supportsVersion: every voter supports kraft.version v.
func (s VoterSet) SupportsVersion(v int16) bool {
	for _, x := range s.voters {
		if v < x.KRaftMin || v > x.KRaftMax {
			return false
		}
	}
	return true
}

func (s VoterSet) String() string {
	var parts []string
	for _, v := range s.voters {
		var eps []string
		for _, e := range v.Endpoints {
			eps = append(eps, e.String())
		}
		parts = append(parts, fmt.Sprintf("%s [%s] kraft=%d-%d", v.Key, strings.Join(eps, " "), v.KRaftMin, v.KRaftMax))
	}
	return "VoterSet(" + strings.Join(parts, ", ") + ")"
}

// ---------------------------------------------------------------------------
// VotersRecord and KRaftVersionRecord (control record types 6 and 5), as
// VotersRecord.json and KRaftVersionRecord.json define them (version 0,
// flexible):
//
//	VotersRecord        Version int16, Voters compact array of
//	                      {VoterId int32, VoterDirectoryId uuid,
//	                       Endpoints compact array of {Name compact string,
//	                         Host compact string, Port uint16, tags},
//	                       KRaftVersionFeature {MinSupportedVersion int16,
//	                         MaxSupportedVersion int16, tags}, tags},
//	                    tags
//	KRaftVersionRecord  Version int16, KRaftVersion int16, tags

const (
	votersRecordVersion       int16 = 0
	kraftVersionRecordVersion int16 = 0
)

// errBadControlRecord reports a control record that does not decode.
var errBadControlRecord = errors.New("raft: malformed control record")

// EncodeVotersRecord renders a VotersRecord value.
func EncodeVotersRecord(s VoterSet) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(votersRecordVersion))
	b = binary.AppendUvarint(b, uint64(len(s.voters))+1)
	for _, v := range s.voters {
		b = binary.BigEndian.AppendUint32(b, uint32(v.Key.ID))
		b = append(b, v.Key.DirectoryID[:]...)
		b = binary.AppendUvarint(b, uint64(len(v.Endpoints))+1)
		for _, e := range v.Endpoints {
			b = appendCompactString(b, e.Name)
			b = appendCompactString(b, e.Host)
			b = binary.BigEndian.AppendUint16(b, e.Port)
			b = append(b, 0) // tags
		}
		b = binary.BigEndian.AppendUint16(b, uint16(v.KRaftMin))
		b = binary.BigEndian.AppendUint16(b, uint16(v.KRaftMax))
		b = append(b, 0, 0) // feature tags, voter tags
	}
	return append(b, 0)
}

// EncodeKRaftVersionRecord renders a KRaftVersionRecord value.
func EncodeKRaftVersionRecord(kraftVersion int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(kraftVersionRecordVersion))
	b = binary.BigEndian.AppendUint16(b, uint16(kraftVersion))
	return append(b, 0)
}

func appendCompactString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s))+1)
	return append(b, s...)
}

// cursor decodes a flexible message without allocating from unchecked lengths.
type cursor struct {
	b   []byte
	err bool
}

func (c *cursor) take(n int) []byte {
	if c.err || n < 0 || n > len(c.b) {
		c.err = true
		return nil
	}
	out := c.b[:n]
	c.b = c.b[n:]
	return out
}

func (c *cursor) i16() int16 {
	p := c.take(2)
	if p == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(p))
}

func (c *cursor) i32() int32 {
	p := c.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (c *cursor) uvarint() uint64 {
	if c.err {
		return 0
	}
	v, n := binary.Uvarint(c.b)
	if n <= 0 {
		c.err = true
		return 0
	}
	c.b = c.b[n:]
	return v
}

// arrayLen reads a compact array length; each element takes at least min bytes.
func (c *cursor) arrayLen(min int) int {
	n := c.uvarint()
	if n == 0 || n-1 > uint64(len(c.b)/min) {
		c.err = true
		return 0
	}
	return int(n - 1)
}

func (c *cursor) compactString() string {
	n := c.uvarint()
	if n == 0 {
		c.err = true // not nullable
		return ""
	}
	return string(c.take(int(min(n-1, uint64(len(c.b))+1))))
}

// skipTags skips a tagged-field section.
func (c *cursor) skipTags() {
	n := c.uvarint()
	if n > uint64(len(c.b)) {
		c.err = true
		return
	}
	for i := uint64(0); i < n && !c.err; i++ {
		c.uvarint() // tag
		size := c.uvarint()
		c.take(int(min(size, uint64(len(c.b))+1)))
	}
}

// DecodeVotersRecord parses a VotersRecord value (VoterSet.fromVotersRecord).
func DecodeVotersRecord(b []byte) (VoterSet, error) {
	c := &cursor{b: b}
	if c.i16() < 0 {
		return VoterSet{}, errBadControlRecord
	}
	n := c.arrayLen(4 + 16 + 1 + 4 + 2)
	voters := make([]Voter, 0, n)
	for i := 0; i < n && !c.err; i++ {
		var v Voter
		v.Key.ID = c.i32()
		copy(v.Key.DirectoryID[:], c.take(16))
		ne := c.arrayLen(1 + 1 + 2 + 1)
		for j := 0; j < ne && !c.err; j++ {
			e := Endpoint{Name: c.compactString(), Host: c.compactString()}
			if p := c.take(2); p != nil {
				e.Port = binary.BigEndian.Uint16(p)
			}
			c.skipTags()
			v.Endpoints = append(v.Endpoints, e)
		}
		v.KRaftMin, v.KRaftMax = c.i16(), c.i16()
		c.skipTags()
		c.skipTags()
		voters = append(voters, v)
	}
	c.skipTags()
	if c.err || len(c.b) != 0 {
		return VoterSet{}, errBadControlRecord
	}
	vs, err := NewVoterSet(voters...)
	if err != nil {
		return VoterSet{}, fmt.Errorf("%w: %v", errBadControlRecord, err)
	}
	return vs, nil
}

// DecodeKRaftVersionRecord parses a KRaftVersionRecord value.
func DecodeKRaftVersionRecord(b []byte) (int16, error) {
	c := &cursor{b: b}
	c.i16()
	v := c.i16()
	c.skipTags()
	if c.err || len(c.b) != 0 || v < 0 || v > MaxKRaftVersion {
		return 0, errBadControlRecord
	}
	return v, nil
}

// MaxKRaftVersion is the newest kraft.version (KRaftVersion.LATEST_PRODUCTION):
// 1 is dynamic voters (KIP-853).
const MaxKRaftVersion int16 = 1

// ParseDirectoryID parses a Kafka Uuid string.
func ParseDirectoryID(s string) ([16]byte, error) {
	var u [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("invalid directory id %q", s)
	}
	copy(u[:], b)
	return u, nil
}
