//go:build invariants && !race

package lockrank

func raceDisable() {}
func raceEnable()  {}
