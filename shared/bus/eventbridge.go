package bus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// PutEventsAPI is the part of the EventBridge client the publisher needs.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// EventBridge publishes to a named bus.
type EventBridge struct {
	Client  PutEventsAPI
	BusName string
}

var _ Publisher = (*EventBridge)(nil)

// maxBatch is PutEvents' limit of entries per call.
const maxBatch = 10

// Publish sends events in batches of ten and fails if any entry failed, naming it.
func (p *EventBridge) Publish(ctx context.Context, events ...Event) error {
	for start := 0; start < len(events); start += maxBatch {
		batch := events[start:min(start+maxBatch, len(events))]
		entries := make([]types.PutEventsRequestEntry, 0, len(batch))
		for _, e := range batch {
			b, err := json.Marshal(e.Detail)
			if err != nil {
				return fmt.Errorf("publish %s: %w", e.DetailType, err)
			}
			entry := types.PutEventsRequestEntry{
				EventBusName: aws.String(p.BusName),
				Source:       aws.String(Source),
				DetailType:   aws.String(e.DetailType),
				Detail:       aws.String(string(b)),
			}
			if !e.Time.IsZero() {
				entry.Time = aws.Time(e.Time)
			}
			entries = append(entries, entry)
		}
		out, err := p.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		if err != nil {
			return fmt.Errorf("put events to %s: %w", p.BusName, err)
		}
		if out.FailedEntryCount > 0 {
			for i, r := range out.Entries {
				if r.ErrorCode != nil {
					return fmt.Errorf("put events to %s: %q failed: %s %s", p.BusName, batch[i].DetailType, aws.ToString(r.ErrorCode), aws.ToString(r.ErrorMessage))
				}
			}
			return fmt.Errorf("put events to %s: %d entries failed", p.BusName, out.FailedEntryCount)
		}
	}
	return nil
}
