package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/shardwise/shardwise/shared/engine"
	"github.com/shardwise/shardwise/shared/webhook"
)

// WebhookSecret builds the metrics webhook's HMAC secret source from the environment (see
// webhook.SecretFromEnv); the SSM client is built only when a parameter is named.
func WebhookSecret(ctx context.Context, getenv func(string) string) (webhook.SecretSource, error) {
	var cfgErr error
	src, err := webhook.SecretFromEnv(getenv, func() webhook.ParameterAPI {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			cfgErr = err
			return nil
		}
		return ssm.NewFromConfig(awsCfg)
	})
	if cfgErr != nil {
		return nil, fmt.Errorf("webhook secret: aws config: %w", cfgErr)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	return src, nil
}

// WebhookReply is the JSON body of a webhook request that was carried out.
type WebhookReply struct {
	Kind    webhook.Kind    `json:"kind"`
	Auth    webhook.Auth    `json:"auth"`
	Ignored string          `json:"ignored,omitempty"`
	Results []webhookResult `json:"results,omitempty"`
}

// webhookResult is one cluster's outcome.
type webhookResult struct {
	Cluster     string `json:"cluster"`
	SnapshotKey string `json:"snapshot_key,omitempty"`
	// PlanKey, HotNodes and Moves are set when the request asked for detection.
	PlanKey  string `json:"plan_key,omitempty"`
	HotNodes int    `json:"hot_nodes"`
	Moves    int    `json:"moves"`
	Error    string `json:"error,omitempty"`
}

// Webhook answers a request to the ingest function's Function URLs. webhook.Receiver
// authenticates and reads it; a pushed _nodes/stats document is ingested in place of the pulled
// node stats, and an Alertmanager alert or a CloudWatch alarm has its cluster ingested and
// planned at once. Every failure is an HTTP answer with a JSON error body; a request refused
// before reaching the engine has stored and published nothing. A failure upstream (5xx) tells the
// caller only its request id; what went wrong is in the log under that id.
func (f *Function) webhook(ctx context.Context, req events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	log := f.Engine.Log
	if log == nil {
		log = slog.Default()
	}
	names := make([]string, 0, len(f.Engine.Config.Clusters))
	for _, c := range f.Engine.Config.Clusters {
		names = append(names, c.Name)
	}
	id := requestID(ctx, req)
	rcv := webhook.Receiver{Clusters: names, Secret: f.WebhookSecret, Replays: webhook.StoreReplays{Store: f.Engine.Store}, Clock: f.Engine.Clock}
	act, err := rcv.Receive(ctx, req)
	if err != nil {
		status, code := webhook.Status(err)
		log.Warn("webhook refused", "status", status, "error", code, "reason", err, "path", req.RawPath,
			"source_ip", req.RequestContext.HTTP.SourceIP, "request_id", id)
		return webhook.ErrorResponse(status, code, err, id)
	}
	reply := WebhookReply{Kind: act.Kind, Auth: act.Auth, Ignored: act.Ignored}
	if act.Ignored != "" {
		log.Info("webhook ignored", "kind", act.Kind, "auth", act.Auth, "reason", act.Ignored)
		return webhook.JSONResponse(http.StatusOK, reply)
	}
	log.Info("webhook", "kind", act.Kind, "auth", act.Auth, "clusters", act.Clusters, "nodes", act.Nodes)
	status := http.StatusOK
	var failures []string
	for _, name := range act.Clusters {
		res := webhookResult{Cluster: name}
		var err error
		if act.NodesStats != nil {
			var ir engine.IngestResult
			ir, err = engine.IngestPushed(ctx, f.Engine, name, f.Pushed, *act.NodesStats)
			res.SnapshotKey = ir.SnapshotKey
		} else {
			var (
				ir engine.IngestResult
				dr engine.DetectResult
			)
			ir, dr, err = f.Engine.IngestAndDetect(ctx, name)
			res.SnapshotKey, res.PlanKey, res.Moves = ir.SnapshotKey, dr.PlanKey, len(dr.Plan.Moves)
			for _, h := range dr.Plan.Hotspots {
				if h.Hot {
					res.HotNodes++
				}
			}
		}
		if err != nil {
			st := engineStatus(err)
			level := slog.LevelWarn
			if st >= http.StatusInternalServerError {
				level = slog.LevelError
			}
			log.Log(ctx, level, "webhook failed", "cluster", name, "status", st, "error", err, "request_id", id)
			res.Error = webhook.PublicMessage(st, err, id)
			failures = append(failures, res.Error)
			status = max(status, st)
		}
		reply.Results = append(reply.Results, res)
	}
	if status != http.StatusOK {
		// Each cluster's outcome is in the results; the status and code are the worst failure's.
		body := struct {
			webhook.ErrorBody
			WebhookReply
		}{webhook.ErrorBody{Status: status, Code: engineCode(status), Message: strings.Join(failures, "; "), RequestID: id}, reply}
		return webhook.JSONResponse(status, body)
	}
	return webhook.JSONResponse(http.StatusOK, reply)
}

// requestID names a request in the log and in its answer: the Function URL's request id, else
// the Lambda invocation's.
func requestID(ctx context.Context, req events.LambdaFunctionURLRequest) string {
	if req.RequestContext.RequestID != "" {
		return req.RequestContext.RequestID
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		return lc.AwsRequestID
	}
	return ""
}

// engineStatus maps an engine error to HTTP: pushed stats that do not fit the cluster are the
// sender's fault (422); a cluster that could not be read or stored is a failure upstream (502).
func engineStatus(err error) int {
	switch {
	case errors.Is(err, engine.ErrPushRejected):
		return http.StatusUnprocessableEntity
	case errors.Is(err, engine.ErrUnknownCluster):
		return http.StatusNotFound
	}
	return http.StatusBadGateway
}

func engineCode(status int) string {
	switch status {
	case http.StatusUnprocessableEntity:
		return "push_rejected"
	case http.StatusNotFound:
		return "unknown_cluster"
	}
	return "ingest_failed"
}
