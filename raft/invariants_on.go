//go:build invariants

package raft

const invariantsEnabled = true
