// (issue 19: being written)
#pragma once
