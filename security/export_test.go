package security

import "go.uber.org/zap"

var nopLog = zap.NewNop()
