package group

import "time"

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
