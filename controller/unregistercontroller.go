package controller

// UnregisterController (94) v0 (KIP-1223, Kafka 4.4): removes a controller's
// registration (kafka-cluster.sh unregister-controller, or
// kafka-metadata-quorum.sh remove-controller --unregister), as
// ClusterControlManager.unregisterController decides it: metadata.version
// must be at least 4.4-IV2 (UNSUPPORTED_VERSION otherwise), the controller
// must be registered (CONTROLLER_ID_NOT_REGISTERED otherwise); the answer
// follows the commit of one UnregisterControllerRecord. It does not touch
// the raft voter set (RemoveRaftVoter does).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

func (c *Controller) unregisterController(ctx context.Context, req *kmsg.UnregisterControllerRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	img := c.cache.Image()
	switch {
	case img.MetadataVersion() < metadatacache.MV4_4_IV2:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = strp("The current MetadataVersion is too old to support controller unregistration.")
		return resp
	case img.Controller(req.ControllerID) == nil:
		resp.ErrorCode = kerr.ControllerIDNotRegistered.Code
		resp.ErrorMessage = strp(fmt.Sprintf("Controller ID %d is not currently registered.", req.ControllerID))
		return resp
	}
	r := metadatacache.NewUnregisterControllerRecord()
	r.ControllerID = req.ControllerID
	if _, err := c.write(ctx, []metadatacache.Record{r}); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	c.log.Info("unregistered controller", zap.Int32("controller", req.ControllerID))
	return resp
}
