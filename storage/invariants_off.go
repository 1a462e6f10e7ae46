//go:build !invariants && !race

package storage

// invariantsEnabled: broken invariants are returned as errors in production builds.
const invariantsEnabled = false
