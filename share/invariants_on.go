//go:build invariants || race

package share

// invariantsEnabled: broken invariants panic (tests run with -race or -tags invariants).
const invariantsEnabled = true
