package storage

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Text checkpoint files (CheckpointFile.java): line 1 the version, line 2 the entry
// count, then one entry per line, fields separated by one space. Written to
// <name>.tmp, fsynced, renamed over <name>, directory fsynced.

var errBadCheckpoint = errors.New("malformed checkpoint file")

func writeCheckpoint(fs vfs.FS, name string, version int, entries []string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", version, len(entries))
	for _, e := range entries {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	return vfs.WriteFileAtomic(fs, name, b.Bytes())
}

// readCheckpoint returns the entry lines, split into fields. A missing file is no
// entries and no error.
func readCheckpoint(fs vfs.FS, name string, version int, fields int) ([][]string, error) {
	data, err := vfs.ReadFile(fs, name)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	if len(data) == 0 {
		return nil, nil // Kafka creates an empty file before its first write (CheckpointFile)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w %s: missing header", errBadCheckpoint, name)
	}
	v, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || v != version {
		return nil, fmt.Errorf("%w %s: unrecognized version %q", errBadCheckpoint, name, lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w %s: expected %q entries, found %d", errBadCheckpoint, name, lines[1], len(lines)-2)
	}
	out := make([][]string, 0, n)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, fmt.Errorf("%w %s: bad entry %q", errBadCheckpoint, name, l)
		}
		out = append(out, f)
	}
	return out, nil
}

// partition.metadata (PartitionMetadataFile.java):
//
//	version: 0
//	topic_id: <base64url topic id, no padding>
const partitionMetadataFile = "partition.metadata"

// TopicIDString renders a topic id the way Kafka's Uuid.toString does.
func TopicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ParseTopicID parses Kafka's Uuid string form.
func ParseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("invalid topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

func writePartitionMetadata(fs vfs.FS, dir string, id [16]byte) error {
	return vfs.WriteFileAtomic(fs, dir+"/"+partitionMetadataFile, topicIDFileData(id))
}

// topicIDFileData is partition.metadata's content (PartitionMetadataFile).
func topicIDFileData(id [16]byte) []byte {
	return []byte("version: 0\ntopic_id: " + TopicIDString(id))
}

func readPartitionMetadata(fs vfs.FS, dir string) ([16]byte, bool, error) {
	var id [16]byte
	data, err := vfs.ReadFile(fs, dir+"/"+partitionMetadataFile)
	if err != nil {
		if os.IsNotExist(err) {
			return id, false, nil
		}
		return id, false, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != "version: 0" || !strings.HasPrefix(lines[1], "topic_id: ") {
		return id, false, fmt.Errorf("malformed %s in %s", partitionMetadataFile, dir)
	}
	id, err = ParseTopicID(strings.TrimSpace(strings.TrimPrefix(lines[1], "topic_id: ")))
	return id, err == nil, err
}
