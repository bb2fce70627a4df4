module local.invalid/pause

go 1.22
