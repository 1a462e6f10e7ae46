// Package archtest holds no code: its test checks that project packages
// import only the rooms below them, as docs/ARCHITECTURE.md draws them.
package archtest
