package controller

import (
	"fmt"
	"strings"
)

// Topic-name rules of org.apache.kafka.common.internals.Topic.

const (
	maxTopicNameLen = 249
	// clusterMetadataTopic is the KRaft metadata log; no client may create it.
	clusterMetadataTopic = "__cluster_metadata"
)

// validateTopicName returns Kafka's InvalidTopicException message for an
// illegal name, or "" when the name is legal.
func validateTopicName(name string) string {
	reason := ""
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == ".":
		reason = "'.' is not allowed"
	case name == "..":
		reason = "'..' is not allowed"
	case len(name) > maxTopicNameLen:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, maxTopicNameLen)
	case !legalTopicChars(name):
		reason = fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
	}
	if reason == "" {
		return ""
	}
	return "Topic name is invalid: " + reason
}

func legalTopicChars(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// hasCollisionChars reports whether name contains '.' or '_', which collide
// in metric names.
func hasCollisionChars(name string) bool {
	return strings.ContainsAny(name, "._")
}

// unifyCollisionChars maps '.' to '_' (only to detect collisions).
func unifyCollisionChars(name string) string {
	return strings.ReplaceAll(name, ".", "_")
}
