// (issue 19: being written)
