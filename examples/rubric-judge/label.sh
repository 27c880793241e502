#!/bin/sh
# The example labels: a reviewer's pass/fail on each reply of an eval run, then the judge's
# calibration against them (docs/graders.md, "Calibration").
#   sh examples/rubric-judge/label.sh RUN --project examples/rubric-judge
# Two labels cannot clear the default floor (kappa >= 0.6 over >= 30 labels): the judge's
# tasks stay advisory until enough replies are labelled.
set -eu
run="$1"
shift
wopeval annotate "$run" refund-window --label pass --note "Gives the 30-day window and the next step." "$@"
wopeval annotate "$run" late-parcel --label fail --note "Never apologises for the delay." "$@"
wopeval judges calibrate support.judge "$@"
