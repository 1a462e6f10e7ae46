package main

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
)

// node is what main runs; *broker.Node satisfies it.
type node interface {
	Start() error
	Shutdown(ctx context.Context) error
}

// nodeConfig is what main hands the node (broker.NodeConfig's fields).
type nodeConfig struct {
	Config       *config.Config
	ClusterID    string
	DirectoryIDs map[string][16]byte // log dir -> meta.properties directory.id
	Logger       *zap.Logger
}

var errNoBroker = errors.New("the broker package is not connected to cmd/kgo-broker yet (see newNode in cmd/kgo-broker/node.go)")

// newNode builds the node. It is a variable so tests can run main's server path
// with a fake node. The lead connects the broker package here:
//
//	n, err := broker.NewNode(broker.NodeConfig{Config: nc.Config, ClusterID: nc.ClusterID,
//		DirectoryIDs: nc.DirectoryIDs, Logger: nc.Logger})
//	if err != nil {
//		return nil, err
//	}
//	return n, nil
var newNode = func(nc nodeConfig) (node, error) {
	return nil, errNoBroker
}
