//go:build !invariants && !race

package share

// invariantsEnabled: broken invariants are returned as errors in production builds.
const invariantsEnabled = false
