//go:build !invariants

package raft

const invariantsEnabled = false
