//go:build !invariants && !race

package txn

// invariantsEnabled: broken invariants are returned as errors in production builds.
const invariantsEnabled = false
