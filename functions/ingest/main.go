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
	f, err := handler.Env(ctx, "ingest")
	if err != nil {
		log.Fatal(err)
	}
	if f.WebhookSecret, err = handler.WebhookSecret(ctx, os.Getenv); err != nil {
		log.Fatal(err)
	}
	lambda.Start(f.Ingest)
}
