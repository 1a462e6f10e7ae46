package vfs

import (
	"os"
	"syscall"
)

// Datasync flushes f's data and the metadata needed to read it back (its size),
// but not its timestamps: fdatasync(2). Files of other implementations fall back
// to Sync, so fault injection sees it as an OpSync.
func Datasync(f File) error {
	if o, ok := f.(osFile); ok {
		for {
			err := syscall.Fdatasync(int(o.File.Fd()))
			if err != syscall.EINTR {
				if err != nil {
					return &os.PathError{Op: "fdatasync", Path: o.Name(), Err: err}
				}
				return nil
			}
		}
	}
	return f.Sync()
}
