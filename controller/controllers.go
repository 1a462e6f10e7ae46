package controller

// ControllerRegistration (70) v0, as Kafka 4.4's
// ClusterControlManager.registerController decides it (KIP-919).
//
// Every controller, the active one included, registers with the active
// controller once the finalized metadata.version is 3.7-IV0 or later: its
// incarnation id (new each process run), its listeners (the CONTROLLER
// endpoints), its supported feature ranges and ZkMigrationReady (always
// false: there is no ZooKeeper in Kafka 4). The active controller writes a
// RegisterControllerRecord (v0 at every metadata.version that has it),
// replacing an earlier registration of the same id; nothing else is checked.
// Below 3.7-IV0 the request is refused with UNSUPPORTED_VERSION ("The
// current MetadataVersion is too old to support controller registrations.").
//
// The registrations are replayed into the state (controllers) and the
// image (Image.Controllers); UpdateFeatures checks every registered
// controller's supported ranges and refuses a change while a voter has not
// registered (updatefeatures.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// controllerState is a registered controller (ControllerRegistration), as
// replayed from RegisterControllerRecord.
type controllerState struct {
	id          int32
	incarnation [16]byte
	features    map[string][2]int16
}

func (c *Controller) registerController(ctx context.Context, req *kmsg.ControllerRegistrationRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ControllerRegistrationResponse)
	fail := func(e *apiError) kmsg.Response {
		c.log.Info("controller registration refused", zap.Int32("controller", req.ControllerID), zap.Stringer("error", e))
		resp.ErrorCode, resp.ErrorMessage = e.code(), e.message()
		return resp
	}
	var mv int16
	var prev *controllerState
	c.view(func(s *state) {
		mv = s.metadataVersion()
		if p := s.controllers[req.ControllerID]; p != nil {
			cp := *p
			prev = &cp
		}
	})
	if mv < mv3_7_IV0 {
		return fail(newAPIError(kerr.UnsupportedVersion, "The current MetadataVersion is too old to support controller registrations."))
	}
	rec := metadatacache.NewRegisterControllerRecord()
	rec.SetVersion(metadatacache.RecordVersionFor(metadatacache.KeyRegisterController, mv))
	rec.ControllerID = req.ControllerID
	rec.IncarnationID = req.IncarnationID
	rec.ZkMigrationReady = req.ZkMigrationReady
	rec.EndPoints = make([]metadatacache.ControllerEndpoint, 0, len(req.Listeners))
	for _, l := range req.Listeners {
		rec.EndPoints = append(rec.EndPoints, metadatacache.ControllerEndpoint{
			Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol,
		})
	}
	rec.Features = make([]metadatacache.ControllerFeature, 0, len(req.Features))
	for _, f := range req.Features {
		rec.Features = append(rec.Features, metadatacache.ControllerFeature{
			Name: f.Name, MinSupportedVersion: f.MinSupportedVersion, MaxSupportedVersion: f.MaxSupportedVersion,
		})
	}
	if _, err := c.write(ctx, []metadatacache.Record{rec}); err != nil {
		return fail(defaultAPIError(kerr.NotController))
	}
	if prev == nil || prev.incarnation != req.IncarnationID {
		c.log.Info("registered a controller incarnation", zap.Int32("controller", req.ControllerID),
			zap.String("incarnation", uuidString(req.IncarnationID)))
	}
	return resp
}
