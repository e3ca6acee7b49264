// `tandem demo`: a short tour of the tensor library, printed as it runs.
#pragma once

namespace tandem::demo {
int run();
}
