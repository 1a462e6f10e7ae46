//go:build race

package lockrank

import "runtime"

// raceDisable and raceEnable hide the bookkeeping's own lock from the race
// detector (held.go).
func raceDisable() { runtime.RaceDisable() }
func raceEnable()  { runtime.RaceEnable() }
