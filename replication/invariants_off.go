//go:build !invariants && !race

package replication

// invariantsEnabled: broken invariants are returned as errors in production builds.
const invariantsEnabled = false
