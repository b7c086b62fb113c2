// Package k8s holds the Kubernetes deployment of the fleet: plain manifests
// tied together by kustomize (this directory's kustomization.yaml), NATS
// with JetStream as a StatefulSet (nats/) or from the official Helm chart
// (helm/nats-values.yaml), the workers scaled by KEDA on queue lag, the
// example tool service, NATS users with per-role subject permissions, and
// the dispatcher as a Job or CronJob (examples/). docs/operations.md is the
// operator's guide.
//
// The package has no Go API. Its tests validate the manifests offline:
// every manifest strict-decodes into its k8s.io/api type, the KEDA
// ScaledObject into a local struct, the environment variables set on each
// container are ones the binary reads (taken from the binary's own -h
// output), probes, resources, security contexts and drain timing are
// checked, the Dockerfile builds the binaries the manifests run, the NATS
// permissions are exercised against an in-process server loaded with the
// manifests' config, and the real binaries start, become ready and stop on
// SIGTERM with the environment their manifests give them.
package k8s
