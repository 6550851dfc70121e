package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"better-compute.io/compute/pkg/api"
)

// poolNetworkFlags adds --network-file and --placement-file to pools
// create: JSON files of the pool's network (api.PoolNetwork) and placement
// (api.PoolPlacement), read strictly (an unknown field is an error) before
// the command runs, after the flags already read by an earlier PreRunE.
func poolNetworkFlags(create *cobra.Command, req *api.PoolCreateRequest) {
	var networkFile, placementFile string
	create.Flags().StringVar(&networkFile, "network-file", "",
		`JSON file of the pool's network, e.g. {"privateNetworks":[{"network":"backend"}],"firewalls":["web"],"publicIPv4":false}`)
	create.Flags().StringVar(&placementFile, "placement-file", "",
		`JSON file of the pool's placement, e.g. {"spread":true,"locations":["fsn1","nbg1"]}`)
	before := create.PreRunE
	create.PreRunE = func(cmd *cobra.Command, args []string) error {
		if before != nil {
			if err := before(cmd, args); err != nil {
				return err
			}
		}
		if networkFile != "" {
			req.Network = &api.PoolNetwork{}
			if err := decodeStrictFile("--network-file", networkFile, req.Network); err != nil {
				return err
			}
		}
		if placementFile != "" {
			req.Placement = &api.PoolPlacement{}
			if err := decodeStrictFile("--placement-file", placementFile, req.Placement); err != nil {
				return err
			}
		}
		return nil
	}
}

// decodeStrictFile decodes the JSON file into v, refusing unknown fields.
func decodeStrictFile(flag, file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s %s: %w", flag, file, err)
	}
	return nil
}
