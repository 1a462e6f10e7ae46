package raft

import (
	"fmt"
	"slices"
)

// The voter set and kraft.version histories of the partition
// (KRaftControlRecordStateMachine, VoterSetHistory, TreeMapLogHistory): every
// VotersRecord and KRaftVersionRecord of the log by offset, those of the
// latest snapshot at its last contained offset (end offset - 1; -1 for the
// bootstrap checkpoint 0-0 that kafka-storage.sh format --standalone or
// --initial-controllers writes). The latest voter set is the last entry's,
// else the static voter set of controller.quorum.voters; the kraft.version is
// the last entry's, else 0. Entries appear when batches are appended (the
// leader's own or fetched ones, committed or not) and go with truncation;
// moving the log start keeps the last entry at or below it.

// KRaftVersionAt is a KRaftVersionRecord at an offset.
type KRaftVersionAt struct {
	Offset  int64
	Version int16
}

// VotersAt is a VotersRecord at an offset.
type VotersAt struct {
	Offset int64
	Voters VoterSet
}

// ControlRecords are the kraft.version and voter set records of a log and
// its latest snapshot, ascending by offset (what NewCore restores).
type ControlRecords struct {
	KRaftVersions []KRaftVersionAt
	Voters        []VotersAt
}

type controlHistory struct {
	static VoterSet
	kraft  []KRaftVersionAt
	voters []VotersAt
}

func (h *controlHistory) lastVoters() VoterSet {
	if n := len(h.voters); n > 0 {
		return h.voters[n-1].Voters
	}
	return h.static
}

// lastVotersEntry is the latest VotersRecord (false: the static voters).
func (h *controlHistory) lastVotersEntry() (VotersAt, bool) {
	if n := len(h.voters); n > 0 {
		return h.voters[n-1], true
	}
	return VotersAt{}, false
}

func (h *controlHistory) kraftVersion() int16 {
	if n := len(h.kraft); n > 0 {
		return h.kraft[n-1].Version
	}
	return 0
}

// votersAt is the voter set in effect at offset (VoterSetHistory.valueAtOrBefore,
// falling back to the static voters).
func (h *controlHistory) votersAt(offset int64) (VoterSet, bool) {
	for i := len(h.voters) - 1; i >= 0; i-- {
		if h.voters[i].Offset <= offset {
			return h.voters[i].Voters, true
		}
	}
	return h.static, false
}

func (h *controlHistory) kraftVersionAt(offset int64) int16 {
	for i := len(h.kraft) - 1; i >= 0; i-- {
		if h.kraft[i].Offset <= offset {
			return h.kraft[i].Version
		}
	}
	return 0
}

// addVoters records a voter set (VoterSetHistory.addAt): a change must keep
// an overlapping majority with the previous set of the log (one from the
// bootstrap checkpoint, at -1, may be replaced by anything).
func (h *controlHistory) addVoters(offset int64, vs VoterSet) error {
	if n := len(h.voters); n > 0 {
		last := h.voters[n-1]
		if offset <= last.Offset {
			return fmt.Errorf("raft: voter set at %d not after the last one at %d", offset, last.Offset)
		}
		if last.Offset >= 0 && !last.Voters.HasOverlappingMajority(vs) {
			return fmt.Errorf("raft: last voter set %v doesn't have an overlapping majority with the new voter set %v", last.Voters, vs)
		}
	}
	h.voters = append(h.voters, VotersAt{Offset: offset, Voters: vs})
	return nil
}

func (h *controlHistory) addKRaftVersion(offset int64, v int16) error {
	if n := len(h.kraft); n > 0 && offset <= h.kraft[n-1].Offset {
		return fmt.Errorf("raft: kraft.version at %d not after the last one at %d", offset, h.kraft[n-1].Offset)
	}
	h.kraft = append(h.kraft, KRaftVersionAt{Offset: offset, Version: v})
	return nil
}

// truncateNew drops the entries at or after offset (log truncation).
func (h *controlHistory) truncateNew(offset int64) {
	h.voters = slices.DeleteFunc(h.voters, func(e VotersAt) bool { return e.Offset >= offset })
	h.kraft = slices.DeleteFunc(h.kraft, func(e KRaftVersionAt) bool { return e.Offset >= offset })
}

// truncateOld drops the entries below start but the last one at or below it
// (TreeMapLogHistory.truncateOldEntries).
func (h *controlHistory) truncateOld(start int64) {
	for len(h.voters) > 1 && h.voters[1].Offset <= start {
		h.voters = h.voters[1:]
	}
	for len(h.kraft) > 1 && h.kraft[1].Offset <= start {
		h.kraft = h.kraft[1:]
	}
}

func (h *controlHistory) clear() { h.voters, h.kraft = nil, nil }

// apply records the control records of a batch.
func (h *controlHistory) apply(recs []controlRecord) error {
	for _, r := range recs {
		switch r.typ {
		case ControlKRaftVoters:
			vs, err := DecodeVotersRecord(r.value)
			if err != nil {
				return fmt.Errorf("%w at offset %d", err, r.offset)
			}
			if err := h.addVoters(r.offset, vs); err != nil {
				return err
			}
		case ControlKRaftVersion:
			v, err := DecodeKRaftVersionRecord(r.value)
			if err != nil {
				return fmt.Errorf("%w at offset %d", err, r.offset)
			}
			if err := h.addKRaftVersion(r.offset, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *controlHistory) records() ControlRecords {
	return ControlRecords{KRaftVersions: slices.Clone(h.kraft), Voters: slices.Clone(h.voters)}
}

// entryControlRecords returns the control records of an Entry built by the
// core (Records with ControlType/ControlTypes) or read from the wire (Raw).
func entryControlRecords(e Entry) ([]controlRecord, error) {
	if !e.Control {
		return nil, nil
	}
	if e.Raw == nil {
		out := make([]controlRecord, len(e.Records))
		for i, v := range e.Records {
			typ := e.ControlType
			if i < len(e.ControlTypes) {
				typ = e.ControlTypes[i]
			}
			out[i] = controlRecord{offset: e.Offset + int64(i), typ: typ, value: v}
		}
		return out, nil
	}
	var out []controlRecord
	err := walkBatches(e.Raw, false, func(h batchHeader, raw []byte) error {
		if !h.control() {
			return nil
		}
		recs, err := controlRecords(h, raw)
		out = append(out, recs...)
		return err
	})
	return out, err
}

// ScanControlRecords returns the control records of raw batches (a log read
// at start, from the end of the latest snapshot).
func ScanControlRecords(b []byte, into *ControlRecords) error {
	h := controlHistory{kraft: into.KRaftVersions, voters: into.Voters}
	err := walkBatches(b, false, func(bh batchHeader, raw []byte) error {
		if !bh.control() {
			return nil
		}
		recs, err := controlRecords(bh, raw)
		if err != nil {
			return err
		}
		return h.apply(recs)
	})
	*into = h.records()
	return err
}
