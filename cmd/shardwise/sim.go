package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardwise/shardwise/shared/sim"
)

func newSim() *cobra.Command {
	cmd := &cobra.Command{Use: "sim", Short: "The built-in OpenSearch simulator"}
	var scenario, addr string
	var speed float64
	serve := &cobra.Command{
		Use:   "serve --scenario FILE",
		Short: "Serve the simulator's OpenSearch REST API in (scaled) real time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if speed <= 0 {
				return fmt.Errorf("--speed %v: must be > 0", speed)
			}
			sc, err := sim.LoadScenario(scenario)
			if err != nil {
				return err
			}
			s, err := sim.New(sc, sim.Options{})
			if err != nil {
				return err
			}
			ln, err := (&net.ListenConfig{}).Listen(cmd.Context(), "tcp", addr)
			if err != nil {
				return fmt.Errorf("listen %s: %w", addr, err)
			}
			srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			fmt.Fprintf(cmd.OutOrStdout(), "simulating %s on http://%s at %gx real time\n", sc.Name, ln.Addr(), speed)
			runErr := s.RunRealtime(cmd.Context(), speed)
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			if runErr != nil && !errors.Is(runErr, context.Canceled) {
				return runErr
			}
			fmt.Fprintf(cmd.OutOrStdout(), "scenario ended at %s\n", s.Elapsed())
			return nil
		},
	}
	serve.Flags().StringVar(&scenario, "scenario", "", "scenario file")
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:9200", "listen address")
	serve.Flags().Float64Var(&speed, "speed", 1, "virtual seconds per real second")
	_ = serve.MarkFlagRequired("scenario")
	cmd.AddCommand(serve)
	return cmd
}
