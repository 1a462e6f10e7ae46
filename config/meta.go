package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
)

// MetaPropertiesFile is the name of the file in every log directory that ties it to
// a cluster and a node (Kafka's MetaPropertiesEnsemble.META_PROPERTIES_NAME).
const MetaPropertiesFile = "meta.properties"

// MetaProperties is a log directory's meta.properties
// (metadata/.../properties/MetaProperties.java).
//
// v1 (what the formatter writes):
//
//	#
//	#Sun Nov 29 12:56:41 UTC 2026
//	cluster.id=5L6g3nShT-eMCtK--X86sw
//	directory.id=Lq3Y0fO6Q3mD1x0e3aQk5w
//	node.id=1
//	version=1
//
// v0 (ZooKeeper era): version=0 or absent, broker.id, optional cluster.id.
type MetaProperties struct {
	Version     int    // 0 or 1
	ClusterID   string // "" when absent (v0 only)
	NodeID      int32  // node.id (v1) or broker.id (v0); -1 when absent (v0 only)
	DirectoryID UUID   // zero when absent
}

// ErrNoMetaProperties is returned (wrapped) by ReadMetaProperties when the
// directory has no meta.properties.
var ErrNoMetaProperties = errors.New("no meta.properties")

// ReadMetaProperties reads dir/meta.properties with Kafka's rules and messages.
func ReadMetaProperties(dir string) (MetaProperties, error) {
	path := filepath.Join(dir, MetaPropertiesFile)
	props, err := ReadPropertiesFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return MetaProperties{}, fmt.Errorf("%w in %s", ErrNoMetaProperties, dir)
	}
	if err != nil {
		return MetaProperties{}, err
	}
	m, err := ParseMetaProperties(props)
	if err != nil {
		return MetaProperties{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseMetaProperties interprets meta.properties keys (MetaProperties.Builder).
func ParseMetaProperties(props map[string]string) (MetaProperties, error) {
	m := MetaProperties{NodeID: -1}
	vs, ok := props["version"]
	if !ok {
		vs = "0"
	}
	v, err := strconv.Atoi(vs)
	if err != nil {
		return m, fmt.Errorf("Invalid meta.properties version string '%s'", vs)
	}
	if v != 0 && v != 1 {
		return m, fmt.Errorf("Unknown meta.properties version number %d", v)
	}
	m.Version = v
	idKey := "node.id"
	if v == 0 {
		idKey = "broker.id"
	}
	if s, ok := props[idKey]; ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return m, fmt.Errorf("Unable to read %s as a base-10 number.", idKey)
		}
		m.NodeID = int32(n)
	} else if v == 1 {
		return m, fmt.Errorf("Failed to find %s", idKey)
	}
	m.ClusterID = props["cluster.id"]
	if s, ok := props["directory.id"]; ok {
		u, err := ParseUUID(s)
		if err != nil {
			return m, fmt.Errorf("Unable to read directory.id as a Uuid: %v", err)
		}
		m.DirectoryID = u
	}
	if v == 1 && m.ClusterID == "" {
		if _, ok := props["cluster.id"]; !ok {
			return m, fmt.Errorf("cluster.id was not found.")
		}
	}
	return m, nil
}

// Properties returns the keys Kafka writes for m.
func (m MetaProperties) Properties() map[string]string {
	p := map[string]string{"version": strconv.Itoa(m.Version)}
	if m.ClusterID != "" {
		p["cluster.id"] = m.ClusterID
	}
	if m.Version == 0 {
		if m.NodeID >= 0 {
			p["broker.id"] = strconv.Itoa(int(m.NodeID))
		}
	} else {
		p["node.id"] = strconv.Itoa(int(m.NodeID))
	}
	if !m.DirectoryID.IsZero() {
		p["directory.id"] = m.DirectoryID.String()
	}
	return p
}

// WriteMetaProperties writes dir/meta.properties as Kafka does: Properties.store
// format into meta.properties.tmp, fsync, then an atomic rename.
func WriteMetaProperties(dir string, m MetaProperties) error {
	return WritePropertiesFile(filepath.Join(dir, MetaPropertiesFile), m.Properties())
}

// VerifyMetaProperties checks the meta.properties of several directories agree, as
// Kafka's MetaPropertiesEnsemble.verify does: one cluster.id, one node.id (equal to
// expectedNodeID when >= 0), distinct non-reserved directory.ids.
func VerifyMetaProperties(dirs map[string]MetaProperties, expectedNodeID int32) error {
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	clusterID := ""
	nodeID := expectedNodeID
	seen := map[UUID]string{}
	for _, d := range names {
		m := dirs[d]
		path := filepath.Join(d, MetaPropertiesFile)
		if m.ClusterID == "" {
			if m.Version == 1 {
				return fmt.Errorf("cluster.id was not specified in the v1 file: %s", path)
			}
		} else if clusterID == "" {
			clusterID = m.ClusterID
		} else if m.ClusterID != clusterID {
			return fmt.Errorf("Invalid cluster.id in: %s. Expected %s, but read %s", path, clusterID, m.ClusterID)
		}
		if m.NodeID < 0 {
			if m.Version == 1 {
				return fmt.Errorf("node.id was not specified in %s", path)
			}
		} else if nodeID < 0 {
			nodeID = m.NodeID
		} else if m.NodeID != nodeID {
			return fmt.Errorf("Stored node id %d doesn't match previous node id %d in %s. If you moved your data, make sure your configured node id matches. If you intend to create a new node, you should remove all data in your data directories.", m.NodeID, nodeID, path)
		}
		if !m.DirectoryID.IsZero() {
			if m.DirectoryID == OneUUID || isReservedDirectoryID(m.DirectoryID) {
				return fmt.Errorf("Invalid reserved directory ID %s found in %s", m.DirectoryID, d)
			}
			if prev, dup := seen[m.DirectoryID]; dup {
				return fmt.Errorf("Duplicate directory ID %s found. It was the ID of %s, but also of %s", m.DirectoryID, prev, d)
			}
			seen[m.DirectoryID] = d
		}
	}
	return nil
}

// isReservedDirectoryID: Kafka's DirectoryId reserves UNASSIGNED (zero), LOST (one)
// and MIGRATING (two), i.e. every id whose first 15 bytes are zero and last byte < 100.
func isReservedDirectoryID(u UUID) bool {
	for _, b := range u[:15] {
		if b != 0 {
			return false
		}
	}
	return u[15] < 100
}

// NewDirectoryID returns a random directory.id that is not reserved
// (DirectoryId.random).
func NewDirectoryID() UUID {
	for {
		if u := RandomUUID(); !isReservedDirectoryID(u) {
			return u
		}
	}
}
