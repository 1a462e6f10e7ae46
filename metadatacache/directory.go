package metadatacache

// IsReservedDirectoryID is DirectoryId.reserved (KIP-858): the first 8
// bytes zero and the last 8 below 100 (MIGRATING 0, UNASSIGNED 1, LOST 2 and
// the ids kept for later), never a real log dir's directory.id.
func IsReservedDirectoryID(id [16]byte) bool {
	for _, b := range id[:15] {
		if b != 0 {
			return false
		}
	}
	return id[15] < 100
}
