// Command ingest is the shardwise ingest Lambda: wiring only (configuration, clients, lambda.Start).
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardwise/shardwise/shared/handler"
)

func main() {
	ctx := context.Background()
	e, metrics, err := handler.Env(ctx, "ingest")
	if err != nil {
		log.Fatal(err)
	}
	secret, err := handler.WebhookSecret(ctx, os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	f := &handler.Function{Name: "ingest", Engine: e, Metrics: metrics, WebhookSecret: secret}
	lambda.Start(f.Ingest)
}
