module github.com/ratelab/ratelab/tools/pion-check

go 1.24.0

require github.com/pion/rtcp v1.2.20
