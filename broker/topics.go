package broker

import (
	"errors"
	"fmt"
)

// Internal topics are flagged IsInternal in Metadata and are never
// auto-created from a Metadata request (Topic.INTERNAL_TOPICS).
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// validateTopicName applies Kafka's Topic.validate rules: not empty, not "."
// or "..", at most 249 characters of [a-zA-Z0-9._-].
func validateTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return errors.New("Topic name cannot be \".\" or \"..\"")
	case len(name) > 249:
		return fmt.Errorf("Topic name is illegal, it can't be longer than 249 characters, topic name: %s", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}
