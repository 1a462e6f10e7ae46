//go:build !invariants

package main

import (
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// diskFaultFS is the fault suite's disk fault hook (diskfault_invariants.go),
// absent from the release binary: always the operating system's file system.
func diskFaultFS(*config.Config, *zap.Logger) vfs.FS { return nil }
