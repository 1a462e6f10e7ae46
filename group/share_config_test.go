package group

import (
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/config"
)

// TestShareBrokerConfig: the group.share.* keys reach the coordinator's
// Config, and an assignment interval of 0 stays 0 (not the default).
func TestShareBrokerConfig(t *testing.T) {
	bc, err := config.SingleNode(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c := FromBrokerConfig(bc)
	c.defaults()
	if c.ShareMaxSize != 200 || c.ShareSessionTimeout != 45*time.Second || c.ShareHeartbeatInterval != 5*time.Second ||
		c.ShareInitializeRetryInterval != 30*time.Second || c.ShareAssignmentInterval != time.Second {
		t.Fatalf("defaults: %+v", c)
	}
	bc, err = config.SingleNode(map[string]string{"log.dirs": t.TempDir(), "group.share.assignment.interval.ms": "0",
		"group.share.session.timeout.ms": "50000", "group.share.max.size": "7"})
	if err != nil {
		t.Fatal(err)
	}
	c = FromBrokerConfig(bc)
	c.defaults()
	if c.ShareAssignmentInterval >= 0 || c.ShareSessionTimeout != 50*time.Second || c.ShareMaxSize != 7 {
		t.Fatalf("configured: %+v", c)
	}
}
