//go:build !linux

package vfs

// Datasync is Sync where fdatasync(2) is not available.
func Datasync(f File) error { return f.Sync() }
