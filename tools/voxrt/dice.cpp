#include <algorithm>
#include <cstdio>

#include "volume_commands.h"
#include "voxrt/volume.h"

namespace voxrt::cli {

CLI::App* add_dice_command(CLI::App& app, DiceArgs& a) {
  CLI::App* c =
      app.add_subcommand("dice",
                         "Dice score per label between two label volumes, and their mean.\n"
                         "Example: voxrt dice labels.nii.gz truth.nii.gz");
  c->add_option("a", a.a, "label volume (NIfTI)")->required()->check(CLI::ExistingFile);
  c->add_option("b", a.b, "label volume (NIfTI) of the same grid")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--labels", a.labels,
                "score only these labels (default: every non-zero label present)")
      ->delimiter(',');
  return c;
}

int cmd_dice(const DiceArgs& a) {
  NiftiImage ia = read_nifti(a.a), ib = read_nifti(a.b);
  if (ia.data.shape() != ib.data.shape())
    throw Error("dice: '" + a.a + "' is " + shape_str(ia.data.shape()) + " but '" + a.b + "' is " +
                shape_str(ib.data.shape()) + " (channels x nz x ny x nx)");
  std::vector<DiceScore> scores = dice_scores(ia.data, ib.data);
  if (!a.labels.empty()) {
    std::vector<DiceScore> picked;
    for (int l : a.labels) {
      auto it = std::find_if(scores.begin(), scores.end(),
                             [&](const DiceScore& s) { return s.label == l; });
      picked.push_back(it != scores.end() ? *it : DiceScore{l, -1, 0, 0});
    }
    scores = picked;
  }
  std::printf("%-8s %-8s %12s %12s\n", "label", "dice", "voxels a", "voxels b");
  double sum = 0;
  int n = 0;
  for (const DiceScore& s : scores) {
    if (s.dice < 0) {
      std::printf("%-8lld %-8s %12d %12d\n", static_cast<long long>(s.label), "empty", 0, 0);
      continue;
    }
    std::printf("%-8lld %-8.4f %12lld %12lld\n", static_cast<long long>(s.label), s.dice,
                static_cast<long long>(s.count_a), static_cast<long long>(s.count_b));
    sum += s.dice;
    ++n;
  }
  if (n == 0) {
    std::printf("mean     n/a (no labels in either volume)\n");
    return 0;
  }
  std::printf("mean     %.4f\n", sum / n);
  return 0;
}

}  // namespace voxrt::cli
