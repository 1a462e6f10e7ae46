package group

import "github.com/kgo-broker/kgo-broker/coordinator"

// The coordinator's time source is the runtime's (coordinator.Clock), so
// session, rebalance and retention timers are driven by one ManualClock in
// tests.
type (
	Clock       = coordinator.Clock
	Timer       = coordinator.Timer
	ManualClock = coordinator.ManualClock
)

type realClock = coordinator.RealClock

// NewManualClock returns a ManualClock reading start.
var NewManualClock = coordinator.NewManualClock
